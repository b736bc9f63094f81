package validation

import (
	"reflect"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

// ReadList: a file that is not a CSV with a header is read as lines, an
// address as written (quotes included); a CSV with a header keeps its
// other columns, the address found by its column's name.
func TestReadList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in string
		want     List
	}{
		{"lines with quoted local parts", "\"john doe\"@example.net\r\n\n  ann@example.org \n\"a,b\"@example.com\n",
			List{Emails: []string{`"john doe"@example.net`, "ann@example.org", `"a,b"@example.com`}}},
		{"blank lines and a byte order mark first", "\xef\xbb\xbf\n\n ann@example.org\nben@example.org",
			List{Emails: []string{"ann@example.org", "ben@example.org"}}},
		{"a headerless CSV is lines", "ann@example.org,Ann\n",
			List{Emails: []string{"ann@example.org,Ann"}}},
		{"a CSV with a header, the address first", "email,name\nann@example.org,Ann\n\"\"\"john doe\"\"@example.net\",\"Doe, John\"\n",
			List{Emails: []string{"ann@example.org", `"john doe"@example.net`}, Columns: []string{"name"},
				Rows: [][]string{{"Ann"}, {"Doe, John"}}}},
		{"the address column found by name", "Name;Plan;E-Mail\nAnn;gold;ann@example.org\nBen;;ben@example.org\n;;\n",
			List{Emails: []string{"ann@example.org", "ben@example.org"}, Columns: []string{"Name", "Plan"},
				Rows: [][]string{{"Ann", "gold"}, {"Ben", ""}}}},
		{"short and long lines", "id\tEmail\n1\tann@example.org\textra\n2\tben@example.org\n",
			List{Emails: []string{"ann@example.org", "ben@example.org"}, Columns: []string{"id", "column 3"},
				Rows: [][]string{{"1", "extra"}, {"2", ""}}}},
		{"a header alone", "email\n", List{Columns: nil}},
		{"nothing", "\n \n", List{}},
	} {
		got, err := ReadList(strings.NewReader(c.in), 10)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %#v, %v\nwant %#v", c.name, got, err, c.want)
		}
	}
	if _, err := ReadList(strings.NewReader("a@x.example\nb@x.example\nc@x.example\n"), 2); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("3 lines past a limit of 2: %v, want invalid", err)
	}
	if _, err := ReadList(strings.NewReader("email\n\"a@x.example\n"), 2); err != nil {
		t.Errorf("an unclosed quote in a CSV (read lazily): %v", err)
	}
}
