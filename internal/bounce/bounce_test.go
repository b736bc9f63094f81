package bounce

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// setup opens a fixture and parses it with the default limit.
func setup(t *testing.T, name string) []Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Parse(f, 1<<20)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return got
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []Report
	}{
		// RFC 3464 DSNs: the message/delivery-status part decides.
		{"postfix-dsn-5.1.1.eml", []Report{{Kind: KindPermanent, Recipient: "nobody@example.net", Status: "5.1.1",
			DiagnosticCode: "smtp; 550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown in virtual mailbox table",
			RemoteMTA:      "mx1.example.net", OriginalMessageID: "<p42.1763770202@example.org>"}}},
		{"gmail-dsn.eml", []Report{{Kind: KindPermanent, Recipient: "does.not.exist@gmail.example", Status: "5.1.1",
			DiagnosticCode: "smtp; 550-5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient's email address for typos or unnecessary spaces. For more information, go to https://support.google.com/mail/?p=NoSuchUser d9443c01a7336-2b0a1c3e7f5si123456ad.301 - gsmtp",
			RemoteMTA:      "gmail-smtp-in.l.google.com", OriginalMessageID: "<p77.1763770300@example.org>"}}},
		{"office365-dsn-5.1.10-5.4.1.eml", []Report{
			{Kind: KindPermanent, Recipient: "nobody@example.net", Status: "5.1.10",
				DiagnosticCode: "smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient nobody@example.net not found by SMTP address lookup",
				RemoteMTA:      "DB8PR01MB5432.eurprd01.prod.exchangelabs.com", OriginalMessageID: "<p91.1763770320@example.org>"},
			{Kind: KindPermanent, Recipient: "blocked@example.com", Status: "5.4.1",
				DiagnosticCode: "smtp;550 5.4.1 Recipient address rejected: Access denied. [DB5EUR01FT012.eop-EUR01.prod.protection.outlook.com 2026-11-22T00:12:08.123Z 08DD1A2B3C4D5E6F]",
				RemoteMTA:      "mail.protection.outlook.com", OriginalMessageID: "<p91.1763770320@example.org>"}}},
		// RFC 3464 section 2.3.3: delayed is temporary.
		{"sendmail-delayed-4.4.7.eml", []Report{{Kind: KindTemporary, Recipient: "slow@example.net", Status: "4.4.7",
			RemoteMTA: "mx.example.net", OriginalMessageID: "<p105.1763770320@example.org>"}}},
		// Original-Recipient wins over Final-Recipient; Action: relayed is skipped.
		{"postfix-dsn-two-recipients.eml", []Report{
			{Kind: KindPermanent, Recipient: "full@example.net", Status: "5.2.2", DiagnosticCode: "smtp; 552 5.2.2 <full@example.net>: Mailbox full",
				RemoteMTA: "mailstore.example.net", OriginalMessageID: "<p120.1763770469@example.org>"},
			{Kind: KindPermanent, Recipient: "team@example.net", Status: "5.7.1", DiagnosticCode: "smtp; 550 5.7.1 Message rejected as spam",
				RemoteMTA: "mailstore.example.net", OriginalMessageID: "<p120.1763770469@example.org>"}}},
		// RFC 5965: no Original-Rcpt-To, so the To of the original message.
		{"yahoo-arf-complaint.eml", []Report{{Kind: KindComplaint, Recipient: "jane.reader@yahoo.example",
			OriginalMessageID: "<p133.1763770500@example.org>", FeedbackType: "abuse"}}},
		// Non-standard: text heuristics.
		{"qmail-bounce.eml", []Report{
			{Kind: KindPermanent, Recipient: "nobody@example.net", Status: "5.1.1",
				DiagnosticCode: "smtp; 550 5.1.1 <nobody@example.net>... User unknown", OriginalMessageID: "<p150.1763770501@example.org>"},
			{Kind: KindPermanent, Recipient: "gone@mail.example.net", Status: "5.1.1",
				DiagnosticCode: "Sorry, no mailbox here by that name. (#5.1.1)", OriginalMessageID: "<p150.1763770501@example.org>"}}},
		{"exim-bounce.eml", []Report{{Kind: KindPermanent, Recipient: "nobody@example.net", Status: "5.1.1",
			DiagnosticCode:    "smtp; 550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown",
			OriginalMessageID: "<p161.1763770569@example.org>"}}},
		// A returned message is given up on even after a 4xx reply.
		{"postfix-nodsn.eml", []Report{
			{Kind: KindPermanent, Recipient: "quota@example.net", Status: "4.2.2",
				DiagnosticCode:    "smtp; 452 4.2.2 Mailbox over quota; giving up after 5 days (in reply to RCPT TO command)",
				OriginalMessageID: "<p170.1763770200@example.org>"},
			{Kind: KindPermanent, Recipient: "ghost@example.net", Status: "5.0.0",
				DiagnosticCode: "smtp; 550 No such user here (in reply to RCPT TO command)", OriginalMessageID: "<p170.1763770200@example.org>"}}},
		{"exchange2010-ndr-html.eml", []Report{{Kind: KindPermanent, Recipient: "former.staff@example.net", Status: "5.1.1",
			DiagnosticCode: "smtp; 550 5.1.1 RESOLVER.ADR.RecipNotFound; not found", OriginalMessageID: "<p180.1763770699@example.org>"}}},
		{"not-a-bounce.eml", []Report{}},
		// Cut inside the delivery-status part: what was read still counts.
		{"truncated-multipart.eml", []Report{{Kind: KindPermanent, Recipient: "lost@example.net", Status: "5.1.1",
			DiagnosticCode: "smtp; 550 5.1.1 <lost@example.net>: Recip", RemoteMTA: "mx1.example.net"}}},
	}
	files, _ := filepath.Glob("testdata/*.eml")
	if len(files) != len(tests) {
		t.Errorf("%d fixtures in testdata, %d in the table", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			got := setup(t, tt.file)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%s):\n got %#v\nwant %#v", tt.file, got, tt.want)
			}
		})
	}
}
