package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func setupBackup(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		path, err := filepath.Abs(x.args[0])
		if err != nil {
			return err
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		if err := a.DB.BackupTo(ctx, path); err != nil {
			return err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "backed up %s to %s (%d bytes); restore by stopping serve and putting it in place of the database file\n",
			x.cfg.DatabaseLocation(), path, fi.Size())
		return nil
	}
}
