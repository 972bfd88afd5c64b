package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/internal/golden"
)

// testIdP is an OpenID provider for tests: an RSA and an ECDSA key made
// in the test, its discovery document and key set served on loopback.
type testIdP struct {
	t      testing.TB
	srv    *httptest.Server
	issuer string
	rsa    *rsa.PrivateKey
	ec     *ecdsa.PrivateKey
	// user are the claims of whoever signs in at /authorize.
	user map[string]any
}

const idAudience = "https://bailiff.test/mcp"

func newTestIdP(t testing.TB) *testIdP {
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := &testIdP{t: t, rsa: r, ec: e}
	mux := http.NewServeMux()
	idp.srv = httptest.NewServer(mux)
	t.Cleanup(idp.srv.Close)
	idp.issuer = idp.srv.URL
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/.well-known/openid-configuration", nil))
	})
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": idp.issuer, "jwks_uri": idp.issuer + "/jwks",
			"authorization_endpoint": idp.issuer + "/authorize", "token_endpoint": idp.issuer + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"}, "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "token_endpoint_auth_methods_supported": []string{"none"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(idp.keySet())
	})
	// An authorization code flow for one preregistered client, which
	// signs in whoever idp.user names: enough for a real MCP client to
	// follow a 401 to a token.
	codes := map[string]string{} // code -> resource
	var mu sync.Mutex
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "mcp-client" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		code := rand.Text()
		codes[code] = q.Get("resource")
		mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := to.Query()
		v.Set("code", code)
		v.Set("state", q.Get("state"))
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		resource, ok := codes[r.FormValue("code")]
		delete(codes, r.FormValue("code"))
		mu.Unlock()
		if !ok || r.FormValue("code_verifier") == "" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		claims := maps.Clone(idp.user)
		claims["aud"] = resource
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": idp.rsaToken(claims), "token_type": "Bearer", "expires_in": 3600})
	})
	return idp
}

func (idp *testIdP) keySet() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &idp.rsa.PublicKey, KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
		{Key: &idp.ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"}}}
}

// sign makes a token: claims over the defaults (this issuer, the test
// audience, an hour's validity); a nil value drops a default.
func (idp *testIdP) sign(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	c := map[string]any{"iss": idp.issuer, "aud": idAudience, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		idp.t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		idp.t.Fatal(err)
	}
	return tok
}

func (idp *testIdP) rsaToken(claims map[string]any) string {
	return idp.sign(jose.RS256, idp.rsa, "rsa-1", claims)
}

func (idp *testIdP) ecToken(claims map[string]any) string {
	return idp.sign(jose.ES256, idp.ec, "ec-1", claims)
}

// badTokens are the tokens every surface must refuse, each with the
// reason it must give.
func (idp *testIdP) badTokens(t *testing.T, aud string) map[string]struct{ tok, reason string } {
	ana := func(k string, v any) map[string]any {
		c := map[string]any{"sub": "ana", "aud": aud, "groups": []any{"engineering"}}
		c[k] = v
		return c
	}
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(v any) string {
		data, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(data)
	}
	body := b64(map[string]any{"iss": idp.issuer, "aud": aud, "sub": "ana", "exp": time.Now().Add(time.Hour).Unix()})
	// The public key, as anyone may fetch it, used as an HMAC secret.
	pub, _ := json.Marshal(idp.keySet().Keys[0])
	hs := idp.sign(jose.HS256, pub, "rsa-1", map[string]any{"sub": "ana", "aud": aud})
	good := strings.Split(idp.rsaToken(ana("x", nil)), ".")
	return map[string]struct{ tok, reason string }{
		"expired":       {idp.rsaToken(ana("exp", time.Now().Add(-time.Hour).Unix())), "expired"},
		"not yet valid": {idp.ecToken(ana("nbf", time.Now().Add(time.Hour).Unix())), "not_yet_valid"},
		"wrong audience": {idp.rsaToken(ana("aud", "https://other.test/mcp")),
			"wrong_audience"},
		"wrong issuer":  {idp.rsaToken(ana("iss", "https://evil.test")), "wrong_issuer"},
		"unknown key":   {idp.sign(jose.RS256, stranger, "rsa-2", ana("x", nil)), "unknown_key"},
		"alg none":      {b64(map[string]any{"alg": "none", "typ": "JWT"}) + "." + body + ".", "alg_none"},
		"hs256 pubkey":  {hs, "alg_hmac"},
		"bad signature": {good[0] + "." + b64(ana("groups", []any{"admins"})) + "." + good[2], "bad_signature"},
	}
}

// idPolicy: echo needs fs.read, send needs mail.send; nobody else gets
// anything.
const idPolicy = `version: 1
name: by-scope
rules:
  - {id: echo-readers, server: go, tool: echo, scopes: [fs.read], action: allow}
  - {id: send-senders, server: go, tool: send, scopes: [mail.send], action: allow}
`

func writeIdentity(t *testing.T, dir, name string, idp *testIdP, groups string) string {
	return writeTestFile(t, dir, name, "issuer: "+idp.issuer+"\naudience: "+idAudience+"\nbase_scopes: [read]\ngroups:\n"+groups)
}

// TestIdentityStdio: three people in different groups, one unchanged
// policy, different verdicts; the log records who each was and verifies;
// a candidate mapping shadow-scores the calls it changes.
func TestIdentityStdio(t *testing.T) {
	idp := newTestIdP(t)
	dir := t.TempDir()
	server := sdkServer(t, dir)
	policy := writeTestFile(t, dir, "policy.yaml", idPolicy)
	ident := writeIdentity(t, dir, "identity.yaml", idp, "  engineering: [fs.read]\n  sales: [mail.send, fs.read]\n")
	audit := filepath.Join(dir, "audit.jsonl")
	people := []struct {
		who, token     string
		echoOK, sendOK bool
	}{
		{"ana", idp.rsaToken(map[string]any{"sub": "ana", "groups": []any{"engineering"}}), true, false},
		{"ben", idp.ecToken(map[string]any{"sub": "ben", "groups": []any{"sales"}, "email": "ben@corp.test", "email_verified": true}), true, true},
		{"cho", idp.rsaToken(map[string]any{"sub": "cho", "groups": []any{"contractors"}}), false, false},
		// ana again, now in sales: the same subject, other scopes.
		{"ana in sales", idp.rsaToken(map[string]any{"sub": "ana", "groups": []any{"sales"}}), true, true},
	}
	envFile := filepath.Join(dir, "server.env")
	gw := writeTestFile(t, dir, "gw.yaml", "policy: policy.yaml\naudit: gw.audit.jsonl\nidentity:\n  issuer: "+idp.issuer+"\n  audience: "+idAudience+
		"\n  groups: {engineering: [fs.read]}\nservers:\n  go:\n    command: sh\n    args: [-c, 'env > "+envFile+".gw; exec "+server+"']\n")
	for _, p := range people {
		cmd := exec.Command(os.Args[0], "run", "--policy", policy, "--audit", audit, "--server", "go", "--identity", ident, "--", "sh", "-c", "env > "+envFile+"; exec "+server)
		prefix := ""
		if p.who == "ana" {
			// ana comes through a gateway config's identity: section.
			cmd, prefix = exec.Command(os.Args[0], "gateway", "--config", gw), "go."
		}
		cmd.Env = append(os.Environ(), childEnv+"=1", "USER=tester", "BAILIFF_ID_TOKEN="+p.token)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "id-test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Fatalf("%s: connect: %v\n%s", p.who, err, stderr.String())
		}
		for tool, ok := range map[string]bool{"echo": p.echoOK, "send": p.sendOK} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + tool, Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError == ok {
				t.Errorf("%s %s: %v %+v, want allowed %v", p.who, tool, err, res, ok)
			}
		}
		cs.Close()
		cancel()
		if p.who == "cho" && !strings.Contains(stderr.String(), "groups that grant nothing here: contractors") {
			t.Errorf("cho's unmapped group not named:\n%s", stderr.String())
		}
		// No server is handed the token.
		f := envFile
		if prefix != "" {
			f += ".gw"
		}
		env, err := os.ReadFile(f)
		if err != nil || strings.Contains(string(env), p.token) || !strings.Contains(string(env), "USER=tester") {
			t.Errorf("%s: the server's environment %s (%v) holds the token, or is not the server's", p.who, f, err)
		}
		os.Remove(f)
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, p := range people {
		if strings.Contains(log, p.token) || strings.Contains(log, strings.Split(p.token, ".")[2]) {
			t.Errorf("the log holds %s's token", p.who)
		}
	}
	gwLog, err := os.ReadFile(filepath.Join(dir, "gw.audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log += string(gwLog)
	for _, want := range []string{`"subject":"ana","groups":["engineering"],"scopes":["fs.read"],"authenticated":"oidc","issuer":"` + idp.issuer + `","key_id":"rsa-1"`,
		`"email":"ben@corp.test","authenticated":"oidc"`, `"key_id":"ec-1"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	verifiesWithCalls(t, audit, 6)
	verifiesWithCalls(t, filepath.Join(dir, "gw.audit.jsonl"), 2)

	// The pack says who acted, one row per subject and scopes.
	pack := filepath.Join(dir, "pack.md")
	var rout, rerr strings.Builder
	if code := run([]string{"report", "--audit", audit, "--audit", filepath.Join(dir, "gw.audit.jsonl"), "-o", pack}, nil, &rout, &rerr); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, rerr.String())
	}
	md, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| PRINCIPAL | SESSION") || !strings.Contains(string(md), "bailiff calls --principal NAME") {
		t.Errorf("the pack's flagged calls do not name their principals, or it does not say how to list one's calls")
	}
	var rows []string
	for _, line := range strings.Split(string(md[strings.Index(string(md), "### Who acted"):]), "\n")[4:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	from := "token from " + idp.issuer
	if want := []string{"ana | " + from + " | 1 | 2 | 1 | fs.read", "ana | " + from + " | 1 | 2 | 0 | fs.read, mail.send, read",
		"ben | " + from + " | 1 | 2 | 0 | fs.read, mail.send, read", "cho | " + from + " | 1 | 2 | 2 | read"}; !slices.Equal(rows, want) {
		t.Errorf("the pack's Who acted:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	// Contractors may now read: cho's echo alone changes.
	cand := writeIdentity(t, dir, "candidate.yaml", idp, "  engineering: [fs.read]\n  sales: [mail.send, fs.read]\n  contractors: [fs.read]\n")
	var out, errb strings.Builder
	if code := run([]string{"shadow", "--candidate", policy, "--candidate-identity", cand, "--format", "json", audit}, nil, &out, &errb); code != 0 {
		t.Fatalf("shadow: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"newly-allowed":1`) || !strings.Contains(out.String(), `"candidate_identity":"`+cand+`"`) ||
		strings.Count(out.String(), `"type":"example"`) != 1 || !strings.Contains(out.String(), `"tool":"echo","baseline":"deny by scopes (echo-readers)","candidate":"allow by rules (echo-readers)"`) {
		t.Errorf("shadow under the candidate mapping:\n%s", out.String())
	}
	// The same mapping changes nothing; a log of no verified session is
	// refused, not scored as unchanged.
	out.Reset()
	if code := run([]string{"shadow", "--candidate", policy, "--candidate-identity", ident, "--format", "json", audit}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), `"unchanged":6`) {
		t.Errorf("shadow under the recorded mapping: exit %d\n%s", code, out.String())
	}
	// A mapping for another issuer's groups regrants nothing here.
	other := writeTestFile(t, dir, "other.yaml", "issuer: https://other.test\naudience: "+idAudience+"\ngroups: {contractors: [fs.read]}\n")
	errb.Reset()
	if code := run([]string{"shadow", "--candidate", policy, "--candidate-identity", other, audit}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "changes nothing") {
		t.Errorf("a mapping for another issuer: exit %d\n%s", code, errb.String())
	}
	local := filepath.Join(dir, "local.jsonl")
	if code := run([]string{"record", "--policy", "../../fixtures/policies/main.yaml", "--clock", "2026-12-01T09:00:00Z", "../../fixtures/traces/main/deny_taint_exact_email.jsonl", "-o", local}, nil, &out, &errb); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"shadow", "--candidate", "../../fixtures/policies/main.yaml", "--candidate-identity", cand, local}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no session in the input was opened with a token its issuer verified") {
		t.Errorf("a candidate mapping over a log with no verified session: exit %d\n%s", code, errb.String())
	}
}

// TestIdentityRefusedStdio: every bad token stops run, gateway and
// whoami, each with its own reason; none starts the server.
func TestIdentityRefusedStdio(t *testing.T) {
	idp := newTestIdP(t)
	dir := t.TempDir()
	ran := filepath.Join(dir, "started")
	policy := writeTestFile(t, dir, "policy.yaml", idPolicy)
	ident := writeIdentity(t, dir, "identity.yaml", idp, "  engineering: [fs.read]\n")
	gw := writeTestFile(t, dir, "gw.yaml", "policy: policy.yaml\naudit: gw.audit.jsonl\nidentity:\n  issuer: "+idp.issuer+"\n  audience: "+idAudience+"\nservers:\n  go:\n    command: touch\n    args: ["+ran+"]\n")
	surfaces := map[string][]string{
		"run":     {"run", "--policy", policy, "--audit", filepath.Join(dir, "run.audit.jsonl"), "--server", "go", "--identity", ident, "--", "touch", ran},
		"gateway": {"gateway", "--config", gw},
		"whoami":  {"whoami", "--identity", ident},
	}
	for name, bad := range idp.badTokens(t, idAudience) {
		for surface, args := range surfaces {
			t.Setenv("BAILIFF_ID_TOKEN", bad.tok)
			var out, errb strings.Builder
			code := run(args, strings.NewReader(""), &out, &errb)
			if code != 1 || !strings.Contains(errb.String(), "token refused ("+bad.reason+")") {
				t.Errorf("%s, %s: exit %d, want 1 and reason %s\n%s", name, surface, code, bad.reason, errb.String())
			}
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a server was started for a refused token")
	}
	// Accepted, with only unmapped groups: it grants the base scopes
	// alone, and says so.
	t.Setenv("BAILIFF_ID_TOKEN", idp.rsaToken(map[string]any{"sub": "dee", "groups": []any{"contractors", "admins"}}))
	var out, errb strings.Builder
	if code := run(surfaces["whoami"], nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "unmapped   contractors, admins (grant nothing here)\nscopes     read\n") {
		t.Errorf("unmapped groups: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// TestIdentityStartRefusals: with identity configured, nobody acts
// without a token, and no setting can name the principal instead.
func TestIdentityStartRefusals(t *testing.T) {
	idp := newTestIdP(t)
	dir := t.TempDir()
	policy := writeTestFile(t, dir, "policy.yaml", idPolicy)
	ident := writeIdentity(t, dir, "identity.yaml", idp, "  engineering: [fs.read]\n")
	tokenFile := writeTestFile(t, dir, "token", idp.rsaToken(map[string]any{"sub": "ana"}))
	gwHead := "policy: policy.yaml\naudit: gw.audit.jsonl\nidentity: {issuer: " + idp.issuer + ", audience: " + idAudience + "}\nservers:\n  go:\n    command: 'true'\n"
	runArgs := []string{"run", "--policy", policy, "--server", "go", "--identity", ident}
	for _, c := range []struct {
		name  string
		env   string // BAILIFF_ID_TOKEN
		args  []string
		code  int
		error string
	}{
		{"no token", "", append(runArgs, "--", "true"), 2, "identity is configured and no token was given"},
		{"two tokens", "x", append(runArgs, "--id-token-file", tokenFile, "--", "true"), 2, "both set"},
		{"principal flag", "", append(runArgs, "--principal", "root", "--id-token-file", tokenFile, "--", "true"), 2, "the token alone says who acts"},
		{"scopes flag", "", append(runArgs, "--scopes", "mail.send", "--id-token-file", tokenFile, "--", "true"), 2, "the token alone says who acts"},
		{"token without identity", "", []string{"run", "--policy", policy, "--server", "go", "--id-token-file", tokenFile, "--", "true"}, 2, "nothing would check the token"},
		{"identity twice", "", append(runArgs, "--id-issuer", idp.issuer, "--", "true"), 2, "name identity in one place"},
		{"hmac configured", "", []string{"whoami", "--id-issuer", idp.issuer, "--id-audience", idAudience, "--id-algorithms", "HS256", "--id-token-file", tokenFile}, 2, `algorithm "HS256" cannot be configured`},
		{"none configured", "", []string{"whoami", "--id-issuer", idp.issuer, "--id-audience", idAudience, "--id-algorithms", "none", "--id-token-file", tokenFile}, 2, `algorithm "none" cannot be configured`},
		{"no audience", "", []string{"whoami", "--id-issuer", idp.issuer, "--id-token-file", tokenFile}, 2, "audience is required"},
		{"gateway principal and identity", "", []string{"gateway", "--config", writeTestFile(t, dir, "gw1.yaml", gwHead+"principal: {subject: root}\n")}, 2, "principal: and identity: both set"},
		{"gateway asserted issuer", "", []string{"gateway", "--config", writeTestFile(t, dir, "gw2.yaml", "policy: policy.yaml\nprincipal: {subject: root, issuer: "+idp.issuer+"}\nservers:\n  go:\n    command: 'true'\n")}, 2, "never from configuration"},
		{"token file on HTTP", "", []string{"gateway", "--config", writeTestFile(t, dir, "gw3.yaml", gwHead), "--listen", "127.0.0.1:0", "--id-token-file", tokenFile}, 2, "each request's bearer token says"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("BAILIFF_ID_TOKEN", c.env)
			var out, errb strings.Builder
			if code := run(c.args, strings.NewReader(""), &out, &errb); code != c.code || !strings.Contains(errb.String(), c.error) {
				t.Errorf("exit %d, want %d and %q:\n%s", code, c.code, c.error, errb.String())
			}
		})
	}
}

// TestWhoamiGolden: what whoami prints for an accepted token, keys from a
// JWKS file.
func TestWhoamiGolden(t *testing.T) {
	idp := newTestIdP(t)
	dir := t.TempDir()
	idp.issuer = "https://id.corp.test"
	data, err := json.Marshal(idp.keySet())
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, dir, "jwks.json", string(data))
	ident := writeTestFile(t, dir, "identity.yaml", "issuer: https://id.corp.test\naudience: "+idAudience+"\njwks_file: jwks.json\nbase_scopes: [read]\ngroups_claim: roles\ngroups:\n  engineering: [fs.read, fs.write]\n")
	exp := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	var got strings.Builder
	for _, c := range []struct {
		name   string
		claims map[string]any
	}{
		{"engineer", map[string]any{"sub": "ana", "roles": []any{"engineering", "contractors"}, "email": "ana@corp.test", "email_verified": true, "exp": exp}},
		{"unverified email", map[string]any{"sub": "ben", "email": "ben@corp.test", "exp": exp}},
		{"escapes", map[string]any{"sub": "eve\u200b", "roles": []any{"engi\u202eneering"}, "exp": exp}},
		{"control", map[string]any{"sub": "eve\x1b[2J", "exp": exp}},
		{"one group with a comma", map[string]any{"sub": "fay", "roles": []any{"sales, admins", " engineering"}, "exp": exp}},
		{"expired", map[string]any{"sub": "ana", "exp": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()}},
	} {
		t.Setenv("BAILIFF_ID_TOKEN", idp.ecToken(c.claims))
		var out, errb strings.Builder
		code := run([]string{"whoami", "--identity", ident}, nil, &out, &errb)
		got.WriteString("== " + c.name + " (exit " + string(rune('0'+code)) + ")\n" + out.String() + errb.String())
	}
	golden.Check(t, "../../golden/whoami/whoami.txt", []byte(got.String()))
}

// TestTokenNeverToServers: a gateway config cannot hand a server the
// token, by expansion into any of its settings or by naming the variable.
func TestTokenNeverToServers(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BAILIFF_ID_TOKEN", "eyJ.secret.token")
	for name, server := range map[string]string{
		"args":     "command: srv\n    args: [--auth, '${BAILIFF_ID_TOKEN}']",
		"env":      "command: srv\n    env: {UPSTREAM_TOKEN: '$BAILIFF_ID_TOKEN'}",
		"env name": "command: srv\n    env: {BAILIFF_ID_TOKEN: x}",
		"command":  "command: 'srv-${BAILIFF_ID_TOKEN}'",
		"cwd":      "command: srv\n    cwd: '/tmp/${BAILIFF_ID_TOKEN}'",
		"url":      "url: 'https://mcp.example/?t=${BAILIFF_ID_TOKEN}'",
	} {
		gw := writeTestFile(t, dir, "gw.yaml", "servers:\n  a:\n    "+server+"\n")
		_, err := loadGatewayConfig(nil, gw)
		if err == nil || !strings.Contains(err.Error(), "would be handed $BAILIFF_ID_TOKEN") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestShadowCandidateOtherClaim: a candidate that reads its groups from
// another claim than the gateway did cannot be scored on the groups the
// log holds, and is refused rather than scored.
func TestShadowCandidateOtherClaim(t *testing.T) {
	idp := newTestIdP(t)
	dir := t.TempDir()
	policy := writeTestFile(t, dir, "policy.yaml", "version: 1\nrules:\n  - {id: echo-readers, tool: echo, scopes: [fs.read], action: allow}\n")
	ident := writeIdentity(t, dir, "identity.yaml", idp, "  engineering: [fs.read]\n")
	audit := filepath.Join(dir, "audit.jsonl")
	cmd := exec.Command(os.Args[0], "run", "--policy", policy, "--audit", audit, "--server", "go", "--identity", ident, "--", sdkServer(t, dir))
	cmd.Env = append(os.Environ(), childEnv+"=1", "USER=tester", "BAILIFF_ID_TOKEN="+idp.rsaToken(map[string]any{"sub": "ana", "groups": []any{"engineering"}, "roles": []any{"readers"}}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claim-test", Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	cs.Close()
	var out, errb strings.Builder
	data, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(data), `"groups_claim":"groups"`) {
		t.Fatalf("the session record does not say which claim its groups came from (%v):\n%s", err, data)
	}
	roles := writeTestFile(t, dir, "roles.yaml", "issuer: "+idp.issuer+"\naudience: "+idAudience+"\ngroups_claim: roles\ngroups: {readers: [fs.read]}\n")
	errb.Reset()
	if code := run([]string{"shadow", "--candidate", policy, "--candidate-identity", roles, audit}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `reads groups from claim "roles", and 1 verified session recorded the groups of another claim`) {
		t.Errorf("a candidate reading another claim: exit %d\n%s", code, errb.String())
	}
}
