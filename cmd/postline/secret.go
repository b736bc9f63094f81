package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/postline/postline/internal/secret"
)

func setupSecretRotate(fs *flag.FlagSet) runFunc {
	newKey := fs.String("new-key", "", "the new `key`, base64 of 32 bytes (default: a random one)")
	return func(ctx context.Context, x *inv) error {
		key := secret.NewKey()
		if *newKey != "" {
			k, err := secret.Decode(*newKey)
			if err != nil {
				return usagef("--new-key: %v", err)
			}
			key = k
		}
		a, err := x.app(ctx) // checks the current key against the database
		if err != nil {
			return err
		}
		// A key kept in the data directory is replaced there. The new file
		// is written before the commit, so a crash in between leaves the
		// new key on disk next to the old one, never nowhere.
		inFile := x.cfg.SecretKey == ""
		path := secret.KeyFile(x.cfg.DataDir)
		if inFile {
			if err := secret.WriteKeyFile(path+".new", key); err != nil {
				return err
			}
		}
		n, err := a.RotateSecretKey(ctx, key)
		if err != nil {
			if inFile {
				os.Remove(path + ".new")
			}
			return err
		}
		fmt.Fprintf(x.stdout, "re-sealed %d values under the new key (fingerprint %s)\n", n, secret.Fingerprint(key))
		if inFile {
			if err := os.Rename(path+".new", path); err != nil {
				return fmt.Errorf("the database now needs the key in %s.new, but it could not replace %s: %w", path, path, err)
			}
			fmt.Fprintf(x.stdout, "%s now holds the new key.\n", path)
		} else {
			fmt.Fprintf(x.stdout, "Set the new key where %s is set, for every process using this database:\n%s\n",
				x.cfg.Source("secret-key"), secret.Encode(key))
		}
		fmt.Fprintln(x.stdout, "Restart every `postline serve` on this database now: a process still holding the old key cannot open the re-sealed values.")
		return nil
	}
}
