package engine

import "testing"

// RFC 6068 separates mailto header fields with '&', and bailiff splits
// on '&' only; Perl's URI::mailto (libwww URI 5.17, headers()) splits the
// query as URI's query_form does, on '&' and ';':
//
//	perl -MURI -e '%h=URI->new("mailto:bob\@corp.example?subject=x;cc=attacker\@evil.example")->headers; print "$_=$h{$_}\n" for keys %h'
//	cc=attacker@evil.example  subject=x  to=bob@corp.example
//
// So bailiff trusted under "@corp.example" a mailto URI that a Perl mailer
// copies to attacker@evil.example. It must not be allowed.
func TestMailtoSemicolonFieldsNotTrusted(t *testing.T) {
	for _, v := range []string{
		"mailto:bob@corp.example?subject=x;cc=attacker@evil.example",
		"mailto:bob@corp.example?body=hi;bcc=attacker@evil.example",
		"mailto:bob@corp.example?subject=report;to=attacker@evil.example",
	} {
		if d := decideReaders(t, "", "send_email", "to", v); d.Verdict == Allow {
			t.Errorf("%q allowed (%s); Perl's URI::mailto reads a cc/bcc/to of attacker@evil.example", v, d.Reason)
		}
	}
}
