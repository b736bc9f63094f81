package templates

import (
	"strings"
	"testing"
)

// BenchmarkRender renders a receipt-like template (subject, text and HTML
// parts, a loop over five lines) once per iteration: the cost a batch pays
// per recipient.
//
//	go test -run '^$' -bench BenchmarkRender ./internal/templates/
func BenchmarkRender(b *testing.B) {
	html := "<p>Hello {{name}},</p><table>{{#each items}}<tr><td>{{@index}}</td><td>{{sku}}</td><td>{{qty}}</td></tr>{{/each}}</table>" +
		strings.Repeat("<p>Thank you for your order.</p>", 10) + "{{#if coupon}}<p>Code {{coupon}}</p>{{/if}}"
	c, err := Compile("Your order {{order}}, {{name}}", html, "Hello {{name}}, order {{order}}: {{#each items}}{{sku}} x{{qty}}; {{/each}}", false)
	if err != nil {
		b.Fatal(err)
	}
	vars := map[string]any{"name": "Ann <Smith>", "order": 1042, "coupon": "SPRING",
		"items": []any{map[string]any{"sku": "A1", "qty": 1}, map[string]any{"sku": "B2", "qty": 2}, map[string]any{"sku": "C3", "qty": 1},
			map[string]any{"sku": "D4", "qty": 5}, map[string]any{"sku": "E5", "qty": 1}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Render(vars); err != nil {
			b.Fatal(err)
		}
	}
}
