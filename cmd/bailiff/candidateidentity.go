package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"bailiff/engine"
	"bailiff/identity"
	"bailiff/shadow"
)

// regrant is what a candidate identity did to the sessions it was
// shown: regranted, or left because their groups came from another claim.
type regrant struct {
	claim            string
	regranted, other atomic.Int64
}

// check refuses a score the candidate cannot stand behind: one over
// groups never recorded, or one that changed no session.
func (r *regrant) check() error {
	if n := r.other.Load(); n > 0 {
		return usageErr(fmt.Errorf("--candidate-identity reads groups from claim %q, and %s recorded the groups of another claim: what %q held there was never recorded", r.claim, countOf(int(n), "verified session"), r.claim),
			"score a mapping of the claim the gateway read (its groups_claim)")
	}
	if r.regranted.Load() == 0 {
		return usageErr(errors.New("--candidate-identity changes nothing: no session in the input was opened with a token its issuer verified"),
			"the groups it maps are those tokens presented, which only sessions under identity record (and, when it names an issuer, only that issuer's)")
	}
	return nil
}

// candidateIdentity is shadow's --candidate-identity: a remap regranting
// the scopes of every principal a verified token established, from the
// groups the token presented, and what it did. A principal no token
// established keeps its scopes: its groups, if any, were never checked.
func candidateIdentity(stdin io.Reader, name string) (shadow.Remap, *regrant, error) {
	if name == "" {
		return nil, nil, nil
	}
	var cfg identity.Config
	data, err := readInput(stdin, name, kindIdentity, kindGatewayConfig)
	if err != nil {
		return nil, nil, err
	}
	if sniff(data) == kindGatewayConfig {
		gc, err := loadGatewayConfig(stdin, name)
		if err != nil {
			return nil, nil, err
		}
		if gc.Identity == nil {
			return nil, nil, usageErr(fmt.Errorf("--candidate-identity %s has no identity: section", name), "")
		}
		cfg = *gc.Identity
	} else if cfg, err = parseIdentity(name, data); err != nil {
		return nil, nil, err
	}
	if err := cfg.Check(); err != nil {
		return nil, nil, usageErr(fmt.Errorf("--candidate-identity %s: %v", name, err), "")
	}
	r := &regrant{claim: cmp.Or(cfg.GroupsClaim, "groups")}
	return func(p engine.Principal) engine.Principal {
		if p.Authenticated != engine.AuthOIDC || (cfg.Issuer != "" && p.Issuer != cfg.Issuer) {
			// A mapping is for its issuer's groups: another's
			// group of the same name is not the same group.
			return p
		}
		if p.GroupsClaim != r.claim {
			r.other.Add(1)
			return p
		}
		r.regranted.Add(1)
		p.Scopes, _ = identity.Scopes(cfg, p.Groups)
		return p
	}, r, nil
}
