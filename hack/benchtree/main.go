// Command benchtree writes the benchmark repository of internal/benchfixture
// (N Deployments in a base, an overlay pinning every image by digest) for
// hack/bench-cli.sh, so the CLI and the Go benchmarks render the same tree.
//
//	go run ./hack/benchtree -n 2000 DIR
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/throughline-dev/throughline/internal/benchfixture"
)

func main() {
	n := flag.Int("n", 20, "number of Deployments")
	flag.Parse()
	if flag.NArg() != 1 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: benchtree -n N DIR")
		os.Exit(2)
	}
	if _, err := benchfixture.Write(flag.Arg(0), *n); err != nil {
		fmt.Fprintln(os.Stderr, "benchtree:", err)
		os.Exit(1)
	}
}
