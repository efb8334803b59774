package trust

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/throughline-dev/throughline/exitcode"
)

// judge verifies the bundles ds of img and picks, for each requirement of
// pol, the first bundle (in ds's order) that satisfies it. An unmet
// requirement is refused with the failure of a bundle of its kind, else as
// missing.
func judge(ctx context.Context, pol *Policy, img name.Digest, ds []v1.Hash, held map[v1.Hash][]byte, opts Options) (*Evidence, error) {
	cands := make([]*candidate, 0, len(ds))
	for _, d := range ds {
		c, err := load(ctx, pol, img, d, held, opts)
		if err != nil {
			return nil, err
		}
		if c.fail != nil && c.fail.Rule == RuleEvidenceMissing {
			return nil, c.fail // recorded (or listed) evidence the registry lost: never judged without it
		}
		cands = append(cands, c)
	}
	j := &judgement{pol: pol, img: img.String(), cands: cands, opts: opts, ev: &Evidence{Image: img.String()}}
	if j.opts.Now.IsZero() {
		j.opts.Now = time.Now()
	}
	for i := range pol.signers {
		if err := j.signature(i); err != nil {
			return nil, err
		}
	}
	if err := j.attestations(); err != nil {
		return nil, err
	}
	return j.ev, nil
}

type judgement struct {
	pol   *Policy
	img   string
	cands []*candidate
	opts  Options
	ev    *Evidence
}

func (j *judgement) add(c *candidate, signer int) {
	j.ev.Items = append(j.ev.Items, Item{Kind: c.kind, Digest: c.digest, PredicateType: c.stmt.GetPredicateType(),
		Signer: j.pol.signers[signer].name})
}

// failure is the refusal of the first failed bundle of kind, else any
// failed bundle's when anyKind, else nil.
func (j *judgement) failure(kind string, anyKind bool) *exitcode.Refusal {
	for _, c := range j.cands {
		if !c.ok() && c.kind == kind {
			return c.fail
		}
	}
	for _, c := range j.cands {
		if !c.ok() && anyKind && c.kind == kindOther {
			return c.fail
		}
	}
	return nil
}

// signature requires a signature statement verified by signer i.
func (j *judgement) signature(i int) error {
	for _, c := range j.cands {
		if c.ok() && c.kind == KindSignature && slices.Contains(c.v.Signers, i) {
			j.add(c, i)
			return nil
		}
	}
	if f := j.failure(KindSignature, true); f != nil {
		return f
	}
	return refusef(RuleSignatureMissing, j.img, "", "no signature by %s (%d bundles found)", j.pol.signers[i].name, len(j.cands))
}

func (j *judgement) attestations() error {
	a := j.pol.Spec.Attestations
	if a == nil {
		return nil
	}
	if a.Provenance != nil {
		err := j.attestation(KindProvenance, func(c *candidate) (string, error) {
			rule, commit, err := checkProvenance(c.stmt, a.Provenance, j.opts.SourceCommit)
			if err == nil {
				j.ev.SourceCommit = commit
			}
			return rule, err
		})
		if err != nil {
			return err
		}
	}
	if a.SBOM != nil {
		err := j.attestation(KindSBOM, func(c *candidate) (string, error) {
			f := sbomFormat(c.stmt.GetPredicateType())
			if len(a.SBOM.Formats) > 0 && !slices.Contains(a.SBOM.Formats, f) {
				return RuleSBOMFormat, fmt.Errorf("an SBOM in %s, the policy accepts %q", f, a.SBOM.Formats)
			}
			return "", nil
		})
		if err != nil {
			return err
		}
	}
	if a.VulnerabilityScan != nil {
		return j.attestation(KindScan, func(c *candidate) (string, error) {
			return checkScan(c.stmt, a.VulnerabilityScan, j.opts.Now)
		})
	}
	return nil
}

// attestation requires a verified statement of kind that check accepts.
func (j *judgement) attestation(kind string, check func(*candidate) (string, error)) error {
	var first *exitcode.Refusal
	for _, c := range j.cands {
		if !c.ok() || c.kind != kind {
			continue
		}
		rule, err := check(c)
		if err == nil {
			j.add(c, c.v.Signers[0])
			return nil
		}
		if first == nil {
			first = refuse(rule, j.img, c.digest, err)
		}
	}
	if first != nil {
		return first
	}
	if f := j.failure(kind, false); f != nil {
		return f
	}
	return refusef(RuleAttestationMissing, j.img, "", "no verified %s attestation (%d bundles found)", kind, len(j.cands))
}
