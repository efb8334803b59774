package trust

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/throughline-dev/throughline/exitcode"
)

// judge verifies the bundles ds of img and picks, for each requirement of
// pol, the first bundle (in ds's order) that satisfies it. An unmet
// requirement is refused with the failure of a bundle of its kind, else as
// missing. A bundle of optional that the registry does not hold is left
// out (found next to the image, not recorded: whoever can push a referrer
// listing a blob that does not exist must not block the gate with it).
func judge(ctx context.Context, pol *Policy, img name.Digest, ds []v1.Hash, held map[v1.Hash][]byte, opts Options,
	optional map[v1.Hash]bool,
) (*Evidence, error) {
	cands := make([]*candidate, 0, len(ds))
	for _, d := range ds {
		c, err := load(ctx, pol, img, d, held, opts)
		if err != nil {
			return nil, err
		}
		if c.fail != nil && c.fail.Rule == RuleEvidenceMissing {
			if optional[d] {
				continue
			}
			return nil, c.fail // recorded (or listed) evidence the registry lost: never judged without it
		}
		cands = append(cands, c)
	}
	j := &judgement{pol: pol, img: img.String(), cands: cands, opts: opts, ev: &Evidence{Image: img.String()}}
	if j.opts.Now.IsZero() {
		j.opts.Now = time.Now()
	}
	// Every bad bundle of an unmet requirement is refused, one refusal
	// per bundle (errors.Join when several); a requirement no bundle
	// fails is refused as missing, the first alone.
	var refused, missing []*exitcode.Refusal
	for i := range pol.signers {
		refused, missing = j.refuse(refused, missing, j.signature(i))
	}
	for _, err := range j.attestations() {
		refused, missing = j.refuse(refused, missing, err)
	}
	if len(refused) == 0 && len(missing) > 0 {
		return nil, missing[0]
	}
	switch len(refused) {
	case 0:
		return j.ev, nil
	case 1:
		return nil, refused[0]
	}
	errs := make([]error, len(refused))
	for i, r := range refused {
		errs[i] = r
	}
	return nil, errors.Join(errs...)
}

// refuse adds the refusals of err (one, or errors.Join of several) to
// refused, each bundle's once, or to missing when they name no bundle.
func (j *judgement) refuse(refused, missing []*exitcode.Refusal, err error) (bad, none []*exitcode.Refusal) {
	if err == nil {
		return refused, missing
	}
	var rs []error
	if u, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // the members of a join
		rs = u.Unwrap()
	} else {
		rs = []error{err}
	}
	for _, e := range rs {
		r, ok := e.(*exitcode.Refusal) //nolint:errorlint // judge's own refusals, never wrapped
		switch {
		case !ok:
		case r.Field == "":
			missing = append(missing, r)
		case !slices.ContainsFunc(refused, func(o *exitcode.Refusal) bool { return o.Field == r.Field && o.Rule == r.Rule }):
			refused = append(refused, r)
		}
	}
	return refused, missing
}

type judgement struct {
	pol   *Policy
	img   string
	cands []*candidate
	opts  Options
	ev    *Evidence
}

func (j *judgement) add(c *candidate, signer int) {
	name := ""
	if c.kind == KindVerificationSummary && j.pol.summary != nil {
		name = j.pol.summary.name
	} else {
		name = j.pol.signers[signer].name
	}
	it := Item{Kind: c.kind, Digest: c.digest, PredicateType: c.stmt.GetPredicateType(), Signer: name}
	if c.kind == KindScan {
		if data, err := protojson.Marshal(c.stmt.GetPredicate()); err == nil {
			if sc, err := ReadScan(data); err == nil { // checkScan read it already: it passed
				it.Scan = sc.Summary()
			}
		}
	}
	j.ev.Items = append(j.ev.Items, it)
}

// failure is the refusal of every failed bundle of kind, else of every
// failed bundle of no known kind when anyKind, else nil (errors.Join when
// several).
func (j *judgement) failure(kind string, anyKind bool) error {
	var errs []error
	for _, c := range j.cands {
		if !c.ok() && c.kind == kind {
			errs = append(errs, c.fail)
		}
	}
	for _, c := range j.cands {
		if len(errs) == 0 && !c.ok() && anyKind && c.kind == kindOther {
			errs = append(errs, c.fail)
		}
	}
	return joined(errs)
}

// joined is errs as one error: nil, the only one, or their join.
func joined(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// signature requires a signature statement verified by signer i.
func (j *judgement) signature(i int) error {
	for _, c := range j.cands {
		if c.ok() && c.kind == KindSignature && slices.Contains(c.v.Signers, i) {
			j.add(c, i)
			return nil
		}
	}
	if err := j.failure(KindSignature, true); err != nil {
		return err
	}
	return refusef(RuleSignatureMissing, j.img, "", "no signature by %s (%d bundles found)", j.pol.signers[i].name, len(j.cands))
}

// attestations are the refusals of the policy's unmet attestation
// requirements, in the policy's order.
func (j *judgement) attestations() []error {
	a := j.pol.Spec.Attestations
	if a == nil {
		return nil
	}
	var errs []error
	if a.Provenance != nil {
		errs = append(errs, j.attestation(KindProvenance, func(c *candidate) (string, error) {
			rule, commit, err := checkProvenance(c.stmt, a.Provenance, j.opts.SourceCommit)
			if err == nil {
				j.ev.SourceCommit = commit
			}
			return rule, err
		}))
	}
	if a.SBOM != nil {
		errs = append(errs, j.attestation(KindSBOM, func(c *candidate) (string, error) {
			f := sbomFormat(c.stmt.GetPredicateType())
			if len(a.SBOM.Formats) > 0 && !slices.Contains(a.SBOM.Formats, f) {
				return RuleSBOMFormat, fmt.Errorf("an SBOM in %s, the policy accepts %q", f, a.SBOM.Formats)
			}
			return "", nil
		}))
	}
	if a.VulnerabilityScan != nil {
		errs = append(errs, j.attestation(KindScan, func(c *candidate) (string, error) {
			return checkScan(c.stmt, a.VulnerabilityScan, j.opts.Now)
		}))
	}
	if a.VerificationSummary != nil {
		errs = append(errs, j.attestation(KindVerificationSummary, func(c *candidate) (string, error) {
			return checkSummary(c.stmt, a.VerificationSummary.Environment)
		}))
	}
	return errs
}

// attestation requires a verified statement of kind that check accepts;
// else it refuses every bundle of kind that check refused, or that did
// not verify (errors.Join when several), else the requirement as missing.
func (j *judgement) attestation(kind string, check func(*candidate) (string, error)) error {
	var errs []error
	for _, c := range j.cands {
		if !c.ok() || c.kind != kind {
			continue
		}
		rule, err := check(c)
		if err == nil {
			j.add(c, c.v.Signers[0])
			return nil
		}
		errs = append(errs, refuse(rule, j.img, c.digest, err))
	}
	if err := j.failure(kind, false); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return joined(errs)
	}
	return refusef(RuleAttestationMissing, j.img, "", "no verified %s attestation (%d bundles found)", kind, len(j.cands))
}
