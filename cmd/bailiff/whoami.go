package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"bailiff/identity"
)

func newWhoami(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var ip identityParams
	var config string
	c := &cobra.Command{
		Use:   "whoami [--config gateway.yaml | --identity FILE | --id-* flags] [--id-token-file FILE]",
		Short: "Check a token exactly as the gateway would, and say whom it names",
		Long: `whoami checks a token as run and gateway check it, with the same identity
settings (a gateway config's identity: section, an identity file, or the
--id-* flags): its signature by a key of the issuer, issuer, audience,
expiry and not-before. It prints the principal the gateway would record,
the groups the token presents, those that grant nothing here, and the
scopes granted. A token the gateway would refuse exits 1 with the reason.

The token is $BAILIFF_ID_TOKEN, or the file --id-token-file names (- for
standard input). It is never printed.`,
		Example: `  BAILIFF_ID_TOKEN=$(cat token.jwt) bailiff whoami --config gateway.yaml
  bailiff whoami --identity identity.yaml --id-token-file token.jwt
  bailiff whoami --id-issuer https://id.corp.example --id-audience https://bailiff.corp.example/mcp --id-group eng=fs.write --id-token-file -`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return whoami(cmd.Context(), stdin, stdout, config, ip)
		},
	}
	c.Flags().StringVar(&config, "config", "", "a gateway configuration whose identity: section to check the token against")
	ip.register(c)
	return c
}

func whoami(ctx context.Context, stdin io.Reader, stdout io.Writer, config string, ip identityParams) error {
	cfg, ok, err := ip.config(stdin)
	if err != nil {
		return err
	}
	if config != "" {
		if ok {
			return usageErr(errors.New("--config and identity settings both given: name identity in one place"), "")
		}
		gc, err := loadGatewayConfig(stdin, config)
		if err != nil {
			return err
		}
		if gc.Identity == nil {
			return usageErr(fmt.Errorf("%s has no identity: section: the gateway checks no token, and acts for %s", config, orLocal(gc.Principal.Subject)), "")
		}
		cfg, ok = *gc.Identity, true
	}
	if !ok {
		return usageErr(errors.New("no identity settings: nothing to check the token against"), "name them: --config gateway.yaml, --identity FILE, or --id-issuer and --id-audience")
	}
	tok, err := whoamiToken(stdin, ip.tokenFile)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	v, err := newVerifier(ctx, cfg)
	if err != nil {
		return err
	}
	id, err := v.Verify(ctx, tok)
	if err != nil {
		return findingErr(err, "")
	}
	printIdentity(stdout, id)
	return nil
}

// whoamiToken is the token to check: a file (- for standard input) or
// $BAILIFF_ID_TOKEN, as the gateway takes it.
func whoamiToken(stdin io.Reader, file string) (string, error) {
	if file != "-" {
		return stdioToken(file)
	}
	data, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil {
		return "", usageErr(err, "")
	}
	return strings.TrimSpace(string(data)), nil
}

func orLocal(subject string) string {
	if subject == "" {
		return "the local user"
	}
	return subject
}

func printIdentity(w io.Writer, id *identity.Identity) {
	p := id.Principal
	email := shown(p.Email)
	switch {
	case p.Email != "":
		email += " (verified by the issuer)"
	case id.UnverifiedEmail != "":
		email = shown(id.UnverifiedEmail) + " (not verified by the issuer, or not one plain address: not used)"
	default:
		email = "(none)"
	}
	unmapped := shownList(id.Unmapped)
	if len(id.Unmapped) > 0 {
		unmapped += " (grant nothing here)"
	}
	fmt.Fprintf(w, "principal  %s (token verified)\n", shown(p.Subject))
	fmt.Fprintf(w, "issuer     %s\n", shown(p.Issuer))
	fmt.Fprintf(w, "subject    %s\n", shown(p.Subject))
	fmt.Fprintf(w, "key id     %s\n", orNone(shown(p.KeyID)))
	fmt.Fprintf(w, "expires    %s\n", id.Expiry.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "email      %s\n", email)
	fmt.Fprintf(w, "groups     %s\n", shownList(p.Groups))
	fmt.Fprintf(w, "unmapped   %s\n", unmapped)
	fmt.Fprintf(w, "scopes     %s\n", shownList(p.Scopes))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// shownList is names as a list a reader cannot misread: one holding a
// comma, or space at either end, is quoted, so "sales, admins" is never
// two; (none) for none.
func shownList(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = shown(n)
		if out[i] == n && (n == "" || strings.Contains(n, ",") || strings.TrimSpace(n) != n) {
			out[i] = strconv.Quote(n)
		}
	}
	return strings.Join(out, ", ")
}

// shown is s as a terminal may print it: a value holding control or
// invisible format characters is quoted, escapes and all, so a token's
// claims cannot rewrite the screen.
func shown(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
		return strconv.QuoteToASCII(s)
	}
	return s
}
