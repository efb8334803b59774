package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/trust"
)

// Lines of the candidate commit's message (promote candidate writes
// them) that seal the candidacy's evidence in Git.
const (
	// SealPromotion names the candidacy's promotion id.
	SealPromotion = "Promotion: "
	// SealEvidence is one bundle: "Evidence: <kind> <digest>", in order.
	SealEvidence = "Evidence: "
	// SealManifest is the evidence manifest's digest.
	SealManifest = "Evidence-Manifest: "
	// SealScan is the scan summary of one scan bundle (ScanSeal); an old
	// candidate commit has none, and its record no summary.
	SealScan = "Evidence-Scan: "
)

// ScanSeal is the Evidence-Scan line of it (after the prefix): "<digest>
// finished=<RFC 3339> worst=<severity> worstFindings=<n> findings=<n>".
func ScanSeal(it promotion.EvidenceItem) string {
	return fmt.Sprintf("%s finished=%s worst=%s worstFindings=%d findings=%d", it.Digest, it.ScanFinished, it.WorstSeverity, it.WorstFindings,
		it.Findings)
}

// SealedCandidacy refuses (evidence-differs) a candidacy record, rec at
// head, whose evidence departs from what promote candidate sealed: the
// candidate commit (the first commit of head's history holding the
// record's promotion id) and its message's Evidence and
// Evidence-Manifest lines, and the evidence manifest it pushed (the
// bundles it lists, when the registry still has it). The refusal names
// only the bundles that changed.
func SealedCandidacy(ctx context.Context, r *gitops.Repo, head string, rec *promotion.Record, opts trust.Options) error {
	if err := SealedInGit(ctx, r, head, rec); err != nil {
		return err
	}
	ev := rec.Artifact.Evidence
	if ev == nil || ev.Manifest == "" {
		return nil
	}
	file := promotion.RecordPath(rec.App, rec.Target.Environment)
	listed, found, err := trust.Sealed(ctx, ArtifactRef(rec.Artifact), ev.Manifest, opts)
	where := "the evidence manifest " + ev.Manifest
	switch {
	case errors.Is(err, trust.ErrNotEvidenceManifest):
		return sealRefusal(rec, file, where, nil, err.Error())
	case err != nil:
		return fmt.Errorf("reading the evidence sealed at candidacy %s: %w", rec.PromotionID, err)
	case !found:
		return nil // the registry lost it: the candidate commit alone seals the evidence
	}
	want := make([]promotion.EvidenceItem, len(listed))
	for i, d := range listed {
		want[i] = promotion.EvidenceItem{Digest: d}
	}
	have := make([]promotion.EvidenceItem, 0, len(ev.Items))
	for _, d := range ev.Digests() {
		have = append(have, promotion.EvidenceItem{Digest: d})
	}
	if !slices.Equal(have, want) {
		change, changed := itemChanges(want, have)
		return sealRefusal(rec, file, where, changed, change)
	}
	return nil
}

// SealedInGit is the part of SealedCandidacy that Git alone answers, with
// no registry request: rec's evidence, at head, is what the candidate
// commit's message sealed (its Evidence lines, in order, and its
// Evidence-Manifest line). A record without evidence is not refused here
// (CandidacyClaim refuses it). The web view proves a candidacy by it.
func SealedInGit(ctx context.Context, r *gitops.Repo, head string, rec *promotion.Record) error {
	ev := rec.Artifact.Evidence
	if ev == nil {
		return nil // not a candidacy: CandidacyClaim refuses it
	}
	file := promotion.RecordPath(rec.App, rec.Target.Environment)
	commit, err := CandidateCommit(ctx, r, head, rec)
	if err != nil {
		return err
	}
	msg, err := r.Message(ctx, commit)
	if err != nil {
		return err
	}
	sealed, manifest, scans, ok := parseSeal(msg, rec.PromotionID)
	where := "the candidate commit at " + gitrepo.Short(commit)
	if !ok {
		return sealRefusal(rec, file, where, nil, fmt.Sprintf("its message is not promote candidate's for %s "+
			"(no %q line)", rec.PromotionID, SealPromotion+rec.PromotionID))
	}
	got := make([]promotion.EvidenceItem, len(ev.Items))
	for i, it := range ev.Items {
		got[i] = promotion.EvidenceItem{Kind: it.Kind, Digest: it.Digest}
	}
	if !slices.Equal(got, sealed) {
		change, changed := itemChanges(sealed, got)
		return sealRefusal(rec, file, where, changed, change)
	}
	if manifest != nil && *manifest != ev.Manifest {
		return sealRefusal(rec, file, where, nil, fmt.Sprintf("evidence manifest %q in place of %q", ev.Manifest, *manifest))
	}
	// A scan summary is what candidacy read of the bundle: sealed, never
	// added, edited or dropped later.
	for _, it := range ev.Items {
		want, sealedScan := scans[it.Digest]
		switch got := ScanSeal(it); {
		case it.Scanned() && !sealedScan:
			return sealRefusal(rec, file, where, []string{it.Digest}, fmt.Sprintf("the scan summary of %s (%s) was not sealed at candidacy", it.Digest,
				strings.TrimPrefix(got, it.Digest+" ")))
		case sealedScan && got != want:
			return sealRefusal(rec, file, where, []string{it.Digest}, fmt.Sprintf("the scan summary of %s says %s, its candidacy sealed %s", it.Digest,
				orNone(it, got), strings.TrimPrefix(want, it.Digest+" ")))
		}
	}
	return nil
}

// orNone is the summary part of got, the ScanSeal of it ("none" when it
// carries none).
func orNone(it promotion.EvidenceItem, got string) string {
	if !it.Scanned() {
		return "none"
	}
	return strings.TrimPrefix(got, it.Digest+" ")
}

// CandidateCommit is the commit of head's history where rec's record
// (same promotion id) first appears: for a candidacy, the candidate
// commit whose message seals its evidence (the web view links it).
func CandidateCommit(ctx context.Context, r *gitops.Repo, head string, rec *promotion.Record) (string, error) {
	first := head
	err := (&ledger.Reader{Repo: r}).EachVersion(ctx, head, rec.App, rec.Target.Environment, func(v ledger.Version) bool {
		if v.PromotionID() != rec.PromotionID {
			return false // an unreadable, deleted or earlier record: the attempt starts after it
		}
		first = v.Commit
		return true
	})
	return first, err
}

// parseSeal reads a candidate commit's message: the sealed bundles (kind
// and digest), manifest (nil when the message names none) and scan
// summaries (ScanSeal lines by bundle digest); ok is false when it is not
// the candidate commit of id.
func parseSeal(msg, id string) (items []promotion.EvidenceItem, manifest *string, scans map[string]string, ok bool) {
	items, scans = []promotion.EvidenceItem{}, map[string]string{}
	for line := range strings.Lines(msg) {
		line = strings.TrimSpace(line)
		switch {
		case line == SealPromotion+id:
			ok = true
		case strings.HasPrefix(line, SealEvidence):
			kind, digest, _ := strings.Cut(strings.TrimPrefix(line, SealEvidence), " ")
			items = append(items, promotion.EvidenceItem{Kind: kind, Digest: digest})
		case strings.HasPrefix(line, SealManifest):
			m := strings.TrimPrefix(line, SealManifest)
			manifest = &m
		case strings.HasPrefix(line, SealScan):
			s := strings.TrimPrefix(line, SealScan)
			digest, _, _ := strings.Cut(s, " ")
			scans[digest] = s
		}
	}
	return items, manifest, scans, ok
}

// sealRefusal is the evidence-differs refusal of rec against where (what
// sealed it): its field names the one changed bundle, if one.
func sealRefusal(rec *promotion.Record, file, where string, changed []string, change string) error {
	field := "artifact.evidence"
	if len(changed) == 1 {
		field = "evidence " + changed[0]
	}
	return &exitcode.Refusal{Rule: RuleEvidenceDiffers, File: file, Object: ArtifactRef(rec.Artifact), Field: field,
		Reason: fmt.Sprintf("%s: the evidence of %s departs from what its candidacy sealed (%s): %s; the evidence is sealed "+
			"once at candidacy and never edited", RuleEvidenceDiffers, rec.PromotionID, where, change)}
}

// itemChanges says what differs in got from want, pairing a bundle
// replaced by another of the same kind, and returns the digests got
// brings in (or, when it only drops bundles, those it drops).
func itemChanges(want, got []promotion.EvidenceItem) (string, []string) {
	var added, missing []promotion.EvidenceItem
	for _, it := range got {
		if !slices.Contains(want, it) {
			added = append(added, it)
		}
	}
	for _, it := range want {
		if !slices.Contains(got, it) {
			missing = append(missing, it)
		}
	}
	var out, changed []string
	for _, a := range added {
		changed = append(changed, a.Digest)
		i := slices.IndexFunc(missing, func(m promotion.EvidenceItem) bool { return m.Kind == a.Kind })
		if i < 0 {
			out = append(out, fmt.Sprintf("%s %s added", kindName(a.Kind), a.Digest))
			continue
		}
		m := missing[i]
		missing = slices.Delete(missing, i, i+1)
		if m.Digest == a.Digest {
			out = append(out, fmt.Sprintf("%s %s verified by signer %q with predicate type %q, not %q with %q", kindName(a.Kind), a.Digest,
				a.Signer, a.PredicateType, m.Signer, m.PredicateType))
			continue
		}
		out = append(out, fmt.Sprintf("%s %s in place of %s", kindName(a.Kind), a.Digest, m.Digest))
	}
	for _, m := range missing {
		if len(added) == 0 {
			changed = append(changed, m.Digest)
		}
		out = append(out, fmt.Sprintf("%s %s missing", kindName(m.Kind), m.Digest))
	}
	if len(out) == 0 {
		out = append(out, "the same bundles in another order")
	}
	return strings.Join(out, "; "), changed
}

// kindName names a bundle of kind ("" : a bundle of unknown kind).
func kindName(kind string) string {
	if kind == "" {
		return "bundle"
	}
	return kind
}
