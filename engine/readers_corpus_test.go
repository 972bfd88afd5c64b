package engine

import "strings"

// diffItem is one destination of the differential corpus and the
// trusted_destinations entry it is judged under.
type diffItem struct{ entry, value string }

// readersCorpus generates variants of every trusted-entry form (an
// address, a mail domain, a URL prefix, a host glob, domain:) with the
// encodings, separators, Unicode, IP forms and path tricks readers
// disagree on. Each variant is judged under the entry it imitates.
func readersCorpus() []diffItem {
	var out []diffItem
	add := func(entry string, values ...string) {
		for _, v := range values {
			out = append(out, diffItem{entry, v})
		}
	}
	const a, b = "attacker@evil.example", "bob@corp.example"
	// Two recipients joined by every separator a reader might split on,
	// bare and in a mailto URI, in both orders.
	seps := []string{",", ", ", "%2C", "%2c", ";", " ", "\n", "%0A", "%20", "，", "&cc=", "?cc=", "?to=", "?bcc=", "%3Fcc=", "&to=",
		"%26cc=", "?cc%3D", " <", ">", "\t", ":", "|", "!", "%40", "@", "＠", "%"}
	for _, sep := range seps {
		for _, pre := range []string{"", "mailto:", "MAILTO:"} {
			add("@corp.example", pre+a+sep+b, pre+b+sep+a)
		}
	}
	for _, pre := range []string{"", "mailto:", "Bob <", `"Smith, Bob" <`} {
		post := ""
		if strings.HasSuffix(pre, "<") {
			post = ">"
		}
		for _, local := range []string{"bob", "attacker%evil.example", "evil.example!attacker", `"attacker@evil.example"`, "attacker@evil.example",
			"attacker%40evil.example", "bob+tag", "bob.lee", "=?utf-8?q?attacker=40evil.example?=", "bob\u200b", "ｂｏｂ", "bob(x)", "(attacker@evil.example)bob",
			"@evil.example:bob", "bob%2Cattacker", `bob\@x`, "'bob'", "o'brien", "bob'@evil.example'"} {
			for _, dom := range []string{"corp.example", "CORP.example", "corp.example.", "corp.example.evil.example", "evil.example?@corp.example",
				"corp。example", "ｃｏｒｐ.example", "corp.example\u200b", "xn--corp-.example", "[127.0.0.1]", "corp.example>", "corp.example (attacker@evil.example)",
				"corp.example#@evil.example", "corp%2eexample"} {
				add("@corp.example", pre+local+"@"+dom+post)
			}
		}
	}
	// The forms that were allowed before readers were compared.
	add("@corp.example", "mailto:attacker%40evil.example%2Cbob@corp.example", "attacker%evil.example@corp.example", "evil.example!attacker@corp.example")
	add("https://api.corp.example/v1/", `https://api.corp.example\v1\x.evil.example/v1/upload`)
	add("https://api.corp.example/v1/public/", "https://api.corp.example/v1/public/..;/..;/admin/export")
	add("domain:corp.example", `https://www.corp.example\x.evil.example/`)
	for _, v := range []string{"bob@partner.example", "BOB@partner.example", "mailto:bob@partner.example", "bob@partner.example, attacker@evil.example",
		"mailto:bob@partner.example?cc=attacker@evil.example", "mailto:bob@partner.example?cc=bob@partner.example", "Bob <bob@partner.example>",
		"bob@partner.example.", "team: bob@partner.example;", "team: bob@partner.example, attacker@evil.example;", "bob@partner.example;"} {
		add("bob@partner.example", v)
	}
	// URLs under a prefix: the authority and the path, each tricked.
	const host = "api.corp.example"
	auths := []string{host, "API.CORP.EXAMPLE", host + ":443", host + ":0443", host + ":80", host + ".", "x@" + host, host + "@evil.example",
		host + `\@evil.example`, host + `\x.evil.example`, host + "%2F@evil.example", host + "%5C@evil.example", host + "／@evil.example", host + "#@evil.example",
		host + "?@evil.example", host + ":443@evil.example", host + ":@evil.example", "api。corp.example", "ａｐｉ.corp.example", "api.corp.example\u00ad",
		"api.corp%2Eexample", "api%2ecorp.example", host + "%00.evil.example", host + " .evil.example", host + "\t", "evil.example/" + host, "evil.example#" + host,
		host + "%40evil.example", host + ";@evil.example", host + ",evil.example"}
	paths := []string{"/v1/x", "/v1/", "/v1", "/v1/../admin", "/v1/%2e%2e/admin", "/v1/%2E./admin", "/v1/..;/admin", "/v1/..;x=1/admin", "/v1/.;/x", "/v1/;/../admin",
		"/v1/x/..%2f..%2fadmin", "/v1%2f..%2fadmin", "/v1/..%5cadmin", `/v1\..\admin`, `/v1/..\admin`, "//v1/x", "/v1//../admin", "/v1//..//admin", "/V1/x", "/v1;x/y",
		"/v1/x;jsessionid=1", "/v1/x?y=/../../admin", "/v1/x#/../../admin", "/v1/x/%2e%2e/%2e%2e/admin", "/v1/%252e%252e/admin", "/v1/\u2025/admin", "/v1／..／admin",
		"/v1/x\t/../../admin", "/v1/.%2e/admin", "/v1/%2e/x", "/./v1/x", "/admin/../v1/x"}
	for _, s := range []string{"https://", "HTTPS://", "https:", "https:/", `https:\\`, "https:///", "http://", " https://"} {
		add("https://api.corp.example/v1/", s+host+"/v1/x")
	}
	for _, au := range auths {
		add("https://api.corp.example/v1/", "https://"+au+"/v1/x")
	}
	for _, p := range paths {
		add("https://api.corp.example/v1/", "https://"+host+p)
		add("https://api.corp.example/v1/public/", "https://"+host+strings.Replace(p, "/v1", "/v1/public", 1))
	}
	for _, ip := range []string{"127.0.0.1", "0x7f.1", "0x7f000001", "2130706433", "0177.0.0.1", "127.1", "127.0.0.1.", "127.000.000.001", "[::ffff:127.0.0.1]",
		"127.0.0.1:443", "127.0.0.1%2f@evil.example", `127.0.0.1\@evil.example`, "127.0.0.1@evil.example", "127.0.0.1.evil.example", "１２７.0.0.1", "127。0。0。1"} {
		add("https://127.0.0.1/hook", "https://"+ip+"/hook", "https://"+ip+"/hook/../x", "https://"+ip+"/hook;/..;/x")
	}
	// Host globs and registrable domains.
	for _, h := range []string{"www.irs.gov", "irs.gov", "www.irs.gov.evil.example", "wwwirs.gov", "evil.example/?irs.gov", "www.irs.gov\\@evil.example",
		"www.irs.gov%2f@evil.example", "www.irs.gov:443@evil.example", "www.irs.gov#@evil.example", "www．irs．gov", "www.irs.gov。evil.example", "WWW.IRS.GOV",
		"www.irs.gov.", "x.www.irs.gov", "www.irs.gov\\x.evil.example", "www.irs.gov%00.evil.example", "www.irs.gov／@evil.example", "www.irs.gov\u200b",
		"evil.example\\www.irs.gov", "evil.example#.irs.gov", "evil.example?.irs.gov", "www.irs.gov;.evil.example", "[::1]", "www.irs.gov:8443"} {
		add("*.irs.gov", "https://"+h+"/forms", "http://"+h)
	}
	for _, h := range []string{"www.corp.example", "corp.example", "corp.example.evil.example", "evilcorp.example", "www.corp.example\\x.evil.example",
		"www.corp.example\\@x.evil.example", "www.corp.example%5cx.evil.example", "www.corp.example／x.evil.example", "www.corp.example:443\\@evil.example",
		"corp.example@evil.example", "corp.example%40evil.example", "www.corp.example。evil.example", "ｗｗｗ.corp.example", "www.corp.example.", "www.corp.example\u00ad",
		"fa\u00df.corp.example", "xn--fa-hia.corp.example", "www.corp.example\t.evil.example"} {
		add("domain:corp.example", "https://"+h+"/", "https://"+h+"/a?b=c")
	}
	for _, v := range []string{"bob@corp.example", "bob@www.corp.example", "bob@corp.example.evil.example", "mailto:bob@corp.example?cc=attacker@evil.example",
		"bob%evil.example@corp.example", "bob@evilcorp.example", "bob@corp.example, x@evil.example"} {
		add("domain:corp.example", v)
	}
	return out
}
