package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/templates"
)

// testTemplates: versions round trip and count up per name, names are
// per domain, another domain reads and deletes none of them, and the
// limits hold.
func testTemplates(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewTemplates(db)
	_, alice := NewDomainRow(t, db, "alice", "alice.example")
	_, bob := NewDomainRow(t, db, "bob", "bob.example")
	tpl := func(dom int64, name, subject string, strict bool) templates.Template {
		return templates.Template{DomainID: dom, Name: name, Subject: subject, HTML: "<p>" + subject + "</p>",
			Text: subject + " text", Strict: strict, CreatedAt: now}
	}

	v1, err := s.CreateTemplate(ctx, tpl(alice.ID, "welcome", "Hello {{name}}", true), 10)
	if err != nil || v1.ID == 0 || v1.Version != 1 {
		t.Fatalf("CreateTemplate = %+v, %v; want version 1 with an id", v1, err)
	}
	if _, err := s.CreateTemplate(ctx, tpl(alice.ID, "welcome", "again", false), 10); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("creating an existing name = %v, want conflict", err)
	}
	// Names are per domain: Bob may have his own "welcome".
	bobs, err := s.CreateTemplate(ctx, tpl(bob.ID, "welcome", "Bob's", false), 10)
	if err != nil || bobs.Version != 1 {
		t.Fatalf("another domain's template of the same name = %+v, %v", bobs, err)
	}
	later := tpl(alice.ID, "welcome", "Hi {{name}}", false)
	later.CreatedAt, later.Active = now.Add(time.Minute), true
	v2, err := s.AddVersion(ctx, later, 10)
	if err != nil || v2.Version != 2 || v2.ID == v1.ID {
		t.Fatalf("AddVersion = %+v, %v; want version 2, a new row", v2, err)
	}
	if _, err := s.AddVersion(ctx, tpl(alice.ID, "nosuch", "x", false), 10); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("AddVersion of a missing name = %v, want not_found", err)
	}

	got, err := s.Template(ctx, alice.ID, "welcome", 0)
	if err != nil || got.ID != v2.ID || got.Version != 2 || got.Subject != "Hi {{name}}" || got.Strict ||
		!got.CreatedAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("Template(version 0) = %+v, %v; want version 2, the newest", got, err)
	}
	got, err = s.Template(ctx, alice.ID, "welcome", 1)
	if err != nil || got.ID != v1.ID || got.Subject != "Hello {{name}}" || got.HTML != "<p>Hello {{name}}</p>" ||
		got.Text != "Hello {{name}} text" || !got.Strict || !got.CreatedAt.Equal(now) || got.DomainID != alice.ID {
		t.Fatalf("Template(version 1) = %+v, %v; want the first version unchanged", got, err)
	}
	if _, err := s.Template(ctx, alice.ID, "welcome", 3); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Template(version 3) = %v, want not_found", err)
	}
	if got, err := s.Template(ctx, bob.ID, "welcome", 0); err != nil || got.ID != bobs.ID || got.Subject != "Bob's" {
		t.Fatalf("Bob's welcome = %+v, %v; want his own, not Alice's", got, err)
	}

	// Alice's other names are hers alone.
	if _, err := s.CreateTemplate(ctx, tpl(alice.ID, "invoice", "Invoice", false), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Template(ctx, bob.ID, "invoice", 0); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob reading Alice's invoice = %v, want not_found", err)
	}
	if _, err := s.AddVersion(ctx, tpl(bob.ID, "invoice", "x", false), 10); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob adding a version to Alice's invoice = %v, want not_found", err)
	}
	if err := s.DeleteTemplate(ctx, bob.ID, "invoice"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob deleting Alice's invoice = %v, want not_found", err)
	}

	list, err := s.ListTemplates(ctx, alice.ID)
	if err != nil || len(list) != 2 || list[0].Name != "invoice" || list[0].Versions != 1 ||
		list[1].Name != "welcome" || list[1].Version != 2 || list[1].Versions != 2 || list[1].Subject != "Hi {{name}}" {
		t.Fatalf("ListTemplates = %+v, %v; want invoice (1 version), welcome (newest of 2), by name", list, err)
	}
	if list[1].HTML != "" || list[1].Text != "" {
		t.Fatalf("ListTemplates read the content (%q, %q); lists are read without it", list[1].HTML, list[1].Text)
	}
	if list, err := s.ListTemplates(ctx, bob.ID); err != nil || len(list) != 1 || list[0].ID != bobs.ID {
		t.Fatalf("Bob's ListTemplates = %+v, %v; want only his welcome", list, err)
	}

	// Limits: names per domain, versions per name.
	if _, err := s.CreateTemplate(ctx, tpl(alice.ID, "third", "x", false), 2); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("a third name with max 2 = %v, want invalid", err)
	}
	if _, err := s.AddVersion(ctx, tpl(alice.ID, "welcome", "x", false), 2); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("a third version with max 2 = %v, want invalid", err)
	}

	// Delete takes every version; the name starts again at 1.
	if err := s.DeleteTemplate(ctx, alice.ID, "welcome"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{0, 1, 2} {
		if _, err := s.Template(ctx, alice.ID, "welcome", v); apperr.CodeOf(err) != apperr.NotFound {
			t.Fatalf("after delete, Template(version %d) = %v, want not_found", v, err)
		}
	}
	if err := s.DeleteTemplate(ctx, alice.ID, "welcome"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("deleting twice = %v, want not_found", err)
	}
	if got, err := s.Template(ctx, bob.ID, "welcome", 0); err != nil || got.ID != bobs.ID {
		t.Fatalf("Alice's delete reached Bob's welcome: %+v, %v", got, err)
	}
	if again, err := s.CreateTemplate(ctx, tpl(alice.ID, "welcome", "new", false), 10); err != nil || again.Version != 1 {
		t.Fatalf("re-created after delete = %+v, %v; want version 1", again, err)
	}
}

// testTemplatesConcurrent: concurrent writers of one domain cannot pass
// the name limit together nor share a version number.
func testTemplatesConcurrent(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewTemplates(db)
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	const writers, max = 8, 3
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateTemplate(ctx, templates.Template{DomainID: d.ID, Name: fmt.Sprintf("t%d", i), Subject: "s",
				CreatedAt: now}, max)
		}()
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case apperr.CodeOf(err) != apperr.Invalid:
			t.Fatalf("a create past the limit: %v, want invalid", err)
		}
	}
	if list, _ := s.ListTemplates(ctx, d.ID); created != max || len(list) != max {
		t.Fatalf("%d concurrent creates succeeded, %d names stored; want exactly %d", created, len(list), max)
	}

	name := fmt.Sprintf("t%d", func() int {
		for i, err := range errs {
			if err == nil {
				return i
			}
		}
		return -1
	}())
	versions := make([]int, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := s.AddVersion(ctx, templates.Template{DomainID: d.ID, Name: name, Subject: "s", CreatedAt: now}, 100)
			if err != nil {
				t.Error(err)
			}
			versions[i] = v.Version
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, v := range versions {
		if v < 2 || v > writers+1 || seen[v] {
			t.Fatalf("concurrent AddVersion gave versions %v; want each of 2..%d once", versions, writers+1)
		}
		seen[v] = true
	}
}

// testTemplateTags: versions have tags (their number unless given, a
// given one unique per name), one active version is what version 0
// gives, a version changes in place, and the active one cannot be
// deleted; another domain's calls reach none of it.
func testTemplateTags(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewTemplates(db)
	_, alice := NewDomainRow(t, db, "alice", "alice.example")
	_, bob := NewDomainRow(t, db, "bob", "bob.example")
	v1, err := s.CreateTemplate(ctx, templates.Template{DomainID: alice.ID, Name: "news", Subject: "s1", HTML: "h1", Text: "t1",
		Description: "Newsletter", CreatedAt: now}, 10)
	if err != nil || v1.Tag != "1" || !v1.Active {
		t.Fatalf("CreateTemplate = %+v, %v; want tag 1, active", v1, err)
	}
	v2, err := s.AddVersion(ctx, templates.Template{DomainID: alice.ID, Name: "news", Tag: "draft", Subject: "s2", HTML: "h2",
		Text: "t2", Comment: "try", CreatedAt: now}, 10)
	if err != nil || v2.Tag != "draft" || v2.Active || v2.Description != "Newsletter" {
		t.Fatalf("AddVersion(draft) = %+v, %v; want inactive, the description kept", v2, err)
	}
	if _, err := s.AddVersion(ctx, templates.Template{DomainID: alice.ID, Name: "news", Tag: "draft", Subject: "x", CreatedAt: now}, 10); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("a second version tagged draft = %v, want conflict", err)
	}
	if got, err := s.Template(ctx, alice.ID, "news", 0); err != nil || got.ID != v1.ID {
		t.Fatalf("Template(version 0) = %+v, %v; want the active version 1, not the newer draft", got, err)
	}
	up, err := s.UpdateVersion(ctx, templates.Template{DomainID: alice.ID, Name: "news", Tag: "draft", Subject: "s2b", HTML: "h2b",
		Text: "t2b", Comment: "final", Active: true})
	if err != nil || up.ID != v2.ID || up.HTML != "h2b" || up.Comment != "final" || !up.Active {
		t.Fatalf("UpdateVersion = %+v, %v", up, err)
	}
	if got, err := s.Template(ctx, alice.ID, "news", 0); err != nil || got.ID != v2.ID || got.Subject != "s2b" {
		t.Fatalf("after activating draft, Template(version 0) = %+v, %v", got, err)
	}
	if err := s.DeleteVersion(ctx, alice.ID, "news", "draft"); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("deleting the active version = %v, want invalid", err)
	}
	if err := s.DeleteVersion(ctx, bob.ID, "news", "1"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob deleting Alice's version = %v, want not_found", err)
	}
	if err := s.SetDescription(ctx, bob.ID, "news", "x"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob describing Alice's template = %v, want not_found", err)
	}
	if err := s.DeleteVersion(ctx, alice.ID, "news", "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDescription(ctx, alice.ID, "news", "Weekly"); err != nil {
		t.Fatal(err)
	}
	list, err := s.Versions(ctx, alice.ID, "news")
	if err != nil || len(list) != 1 || list[0].Tag != "draft" || list[0].Description != "Weekly" {
		t.Fatalf("Versions = %+v, %v; want draft alone, described Weekly", list, err)
	}
	if list[0].HTML != "" || list[0].Text != "" {
		t.Fatalf("Versions read the content (%q, %q); lists are read without it", list[0].HTML, list[0].Text)
	}
	// Postline's next version is numbered 3 and tagged so.
	v3, err := s.AddVersion(ctx, templates.Template{DomainID: alice.ID, Name: "news", Subject: "s3", Text: "t3", Active: true, CreatedAt: now}, 10)
	if err != nil || v3.Version != 3 || v3.Tag != "3" {
		t.Fatalf("AddVersion = %+v, %v; want version 3 tagged 3", v3, err)
	}
	if got, err := s.TemplateByTag(ctx, alice.ID, "news", "3"); err != nil || got.ID != v3.ID {
		t.Fatalf("TemplateByTag(3) = %+v, %v", got, err)
	}
	if err := s.DeleteAllTemplates(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Versions(ctx, alice.ID, "news"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("after DeleteAllTemplates, Versions = %v, want not_found", err)
	}
}
