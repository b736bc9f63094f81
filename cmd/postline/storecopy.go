package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"

	"github.com/postline/postline/internal/store"
)

func setupStoreCopy(fs *flag.FlagSet) runFunc {
	to := fs.String("to", "", "the PostgreSQL `url` to copy into (postgres://...): a new, empty database")
	return func(ctx context.Context, x *inv) error {
		if !strings.HasPrefix(*to, "postgres://") && !strings.HasPrefix(*to, "postgresql://") {
			return usagef("--to must be a postgres:// URL, got %q", *to)
		}
		if _, ok := x.cfg.SQLitePath(); !ok {
			return usagef("the source must be the SQLite database (unset --database-url / POSTLINE_DATABASE_URL)")
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		dst, err := store.Open(ctx, *to)
		if err != nil {
			return err
		}
		defer dst.Close()
		if err := dst.Migrate(ctx); err != nil {
			return err
		}
		var bar *progressbar.ProgressBar
		current := ""
		counts, err := a.DB.CopyTo(ctx, dst, func(table string, done, total int64) {
			if table != current {
				if bar != nil {
					bar.Finish()
				}
				current = table
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(x.stderr),
					progressbar.OptionSetDescription(fmt.Sprintf("%-18s", table)), progressbar.OptionShowCount())
			}
			bar.Set64(done) //nolint:errcheck // display only
		})
		if bar != nil {
			bar.Finish()
			fmt.Fprintln(x.stderr)
		}
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TABLE\tSQLITE\tPOSTGRESQL")
		bad := 0
		for _, c := range counts {
			mark := ""
			if c.Source != c.Target {
				mark, bad = "  MISMATCH", bad+1
			}
			fmt.Fprintf(tw, "%s\t%d\t%d%s\n", c.Table, c.Source, c.Target, mark)
		}
		tw.Flush()
		if bad > 0 {
			return fmt.Errorf("%d table(s) differ in row count", bad)
		}
		fmt.Fprintf(x.stdout, "copied %d tables; now run serve with --database-url set to the PostgreSQL URL and the same secret key "+
			"(--secret-key, or the secret.key of %s): the sealed DKIM keys and passwords were copied as they are\n", len(counts), x.cfg.DataDir)
		return nil
	}
}
