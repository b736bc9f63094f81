package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// A pipelined transaction commits all its statements or none: a failing
// statement in the middle takes the ones before it back and the ones after
// it never run.
func TestPipelineIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestPostgres(t)
	table := fmt.Sprintf("pipeline_test_%d", rand.Int64())
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE `+table+` (id int PRIMARY KEY, v text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.w.ExecContext(context.Background(), `DROP TABLE `+table) })
	insert := `INSERT INTO ` + table + ` (id, v) VALUES ($1, $2)`
	rows := func() string {
		var got string
		if err := db.w.QueryRowContext(ctx, `SELECT COALESCE(string_agg(id || v, ',' ORDER BY id), '') FROM `+table).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	err := db.InPipeline(ctx, func(q Querier) error {
		for i, v := range []string{"a", "b"} {
			if _, err := q.ExecContext(ctx, insert, i+1, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || rows() != "1a,2b" {
		t.Fatalf("after a good pipeline: err %v, rows %q; want nil and 1a,2b", err, rows())
	}

	err = db.InPipeline(ctx, func(q Querier) error {
		q.ExecContext(ctx, insert, 3, "c")
		q.ExecContext(ctx, insert, 1, "again") // primary key taken
		q.ExecContext(ctx, insert, 4, "d")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "statement 2 of 3") {
		t.Errorf("failing pipeline: err = %v, want the second statement's error", err)
	}
	if got := rows(); got != "1a,2b" {
		t.Errorf("after a failing pipeline rows are %q, want 1a,2b (3 taken back, 4 never run)", got)
	}

	err = db.InPipeline(ctx, func(q Querier) error {
		q.ExecContext(ctx, insert, 5, "e")
		return errors.New("changed my mind")
	})
	if err == nil || rows() != "1a,2b" {
		t.Errorf("a pipeline whose fn fails: err %v, rows %q; want its error and nothing sent", err, rows())
	}

	err = db.InPipeline(ctx, func(q Querier) error {
		_, err := q.QueryContext(ctx, `SELECT 1`)
		return err
	})
	if !errors.Is(err, errPipelineRead) {
		t.Errorf("a read in a pipeline: err = %v, want errPipelineRead", err)
	}
}
