// Package promotion is the end-to-end test of throughline promote against
// real Git: a bare repository served over smart HTTP by git http-backend
// (internal/testenv.StartGitServer, basic auth, non-fast-forward updates
// refused), real clones, and the throughline binary. Concurrent proposes
// race on one attempt (exactly one branch and one record win; every loser
// returns the winner's attempt), the compare-and-swap push fetches and
// re-applies on a non-fast-forward, and the PR job passes once the record is
// VERIFIED and APPROVED. Build tag e2e:
//
//	go test -race -tags e2e -count=1 ./e2e/promotion/
package promotion
