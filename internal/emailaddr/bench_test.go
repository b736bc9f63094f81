package emailaddr

import (
	"net/mail"
	"regexp"
	"testing"
)

// benchAddresses is a realistic mix: mostly ordinary addresses as sign-up
// forms receive them, a few with upper case, IDN, quoting and a literal.
var benchAddresses = []string{
	"john.smith@gmail.com",
	"jane_doe@yahoo.com",
	"support@example.org",
	"first.last+newsletter@outlook.com",
	"info@company.co.uk",
	"a.b.c@sub.domain.example.com",
	"user123@hotmail.com",
	"sales-team@my-company.io",
	"x@y.de",
	"o'brien@example.ie",
	"no-reply@notifications.github.com",
	"marketing@shop.example.fr",
	"billing@accounts.example.net",
	"hr.department@corp.example.com",
	"Mixed.Case@Example.COM",
	"contact@startup.dev",
	"müller@möller.de",
	"инфо@письмо.рф",
	`"john smith"@example.com`,
	"admin@[192.168.0.1]",
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := Parse(benchAddresses[i%len(benchAddresses)]); err != nil {
			b.Fatal(err)
		}
	}
}

// naiveRegexp is the kind of pattern validation code commonly uses (the
// WHATWG HTML "valid e-mail address" production).
var naiveRegexp = regexp.MustCompile(`^[a-zA-Z0-9.!#$%&'*+/=?^_` + "`" +
	`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)

// BenchmarkNaiveBaseline is the usual alternative, net/mail.ParseAddress
// followed by a regular expression, on the same mix, for comparison.
func BenchmarkNaiveBaseline(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		a, err := mail.ParseAddress(benchAddresses[i%len(benchAddresses)])
		if err == nil {
			naiveRegexp.MatchString(a.Address)
		}
	}
}
