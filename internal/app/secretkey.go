package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// Names in the meta table.
const (
	metaFingerprint = "secret_key_fingerprint"
	metaKeyOrigin   = "secret_key_origin"
)

// WrongKeyError is a process started with a secret key other than the one
// the database's values are sealed with. It never runs: a value sealed
// under the wrong key would break its account for every other process.
type WrongKeyError struct{ Msg string }

func (e *WrongKeyError) Error() string { return e.Msg }

// openKey finds the secret key and checks it against the fingerprint the
// database recorded when its first value was sealed. A database without a
// fingerprint (new, or older than fingerprints) records this key's, after
// checking that values already sealed open with it.
func (a *App) openKey(ctx context.Context) ([]byte, error) {
	cfg := a.Config
	found, ok, err := secret.FindKey(cfg.SecretKey, cfg.Source("secret-key"), cfg.DataDir)
	if err != nil {
		return nil, err
	}
	meta := store.NewMeta(a.DB)
	stored, has, err := meta.Get(ctx, metaFingerprint)
	if err != nil {
		return nil, fmt.Errorf("secret key fingerprint: %w", err)
	}
	if has {
		if !ok {
			return nil, a.wrongKey(ctx, stored, "", fmt.Sprintf("no --secret-key, no POSTLINE_SECRET_KEY and no %s", secret.KeyFile(cfg.DataDir)))
		}
		if fp := secret.Fingerprint(found.Key); fp != stored {
			return nil, a.wrongKey(ctx, stored, fp, "the key from "+found.Where)
		}
		return found.Key, nil
	}
	if !ok {
		// A new key for a database that already holds sealed values would
		// open none of them: say so instead of making a key file.
		if col, err := store.FirstUnreadable(ctx, a.DB, nil); err != nil || col != "" {
			if err != nil {
				return nil, err
			}
			return nil, &WrongKeyError{fmt.Sprintf("this database holds sealed values (%s) but this command has no secret key: "+
				"no --secret-key, no POSTLINE_SECRET_KEY and no %s. Give it the key `postline serve` uses.", col, secret.KeyFile(cfg.DataDir))}
		}
		if found, err = secret.NewKeyFile(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	box, err := secret.NewBox(found.Key)
	if err != nil {
		return nil, err
	}
	if col, err := store.FirstUnreadable(ctx, a.DB, box); err != nil {
		return nil, err
	} else if col != "" {
		return nil, &WrongKeyError{fmt.Sprintf("wrong secret key: values in %s do not open with the key from %s. "+
			"Give this command the key `postline serve` uses (--secret-key, POSTLINE_SECRET_KEY, or --data-dir of its secret.key). "+
			"Nothing was changed.", col, found.Where)}
	}
	fp := secret.Fingerprint(found.Key)
	got, err := meta.SetIfAbsent(ctx, metaFingerprint, fp)
	if err != nil {
		return nil, fmt.Errorf("secret key fingerprint: %w", err)
	}
	if got != fp { // another process recorded its key between our read and write
		return nil, a.wrongKey(ctx, got, fp, "the key from "+found.Where)
	}
	host, _ := os.Hostname()
	meta.SetIfAbsent(ctx, metaKeyOrigin, fmt.Sprintf("recorded by `postline %s` on host %s with its key from %s, %s", //nolint:errcheck // a description only
		a.opts.Command, host, found.Where, time.Now().UTC().Format(time.RFC3339)))
	return found.Key, nil
}

func (a *App) wrongKey(ctx context.Context, stored, have, what string) error {
	origin, _, _ := store.NewMeta(a.DB).Get(ctx, metaKeyOrigin)
	msg := fmt.Sprintf("wrong secret key: the values in %s are sealed with the key whose fingerprint is %s", a.Config.DatabaseLocation(), stored)
	if origin != "" {
		msg += " (" + origin + ")"
	}
	if have != "" {
		msg += fmt.Sprintf("; %s has fingerprint %s", what, have)
	} else {
		msg += "; this command has " + what
	}
	if next := secret.KeyFile(a.Config.DataDir) + ".new"; fileExists(next) {
		msg += fmt.Sprintf(" (%s was left by an interrupted `secret rotate`: if the database has its fingerprint, it is the key)", next)
	}
	return &WrongKeyError{msg + ". Give this command the key `postline serve` uses: set POSTLINE_SECRET_KEY (or --secret-key), " +
		"or --data-dir to the directory of the server's secret.key. Nothing was changed."}
}

// RotateSecretKey re-seals every sealed value under newKey and records its
// fingerprint, in one transaction, and returns how many values it
// re-sealed. Processes still running with the old key must be restarted
// with the new one: their next start would refuse the old key.
func (a *App) RotateSecretKey(ctx context.Context, newKey []byte) (int, error) {
	from, err := secret.NewBox(a.SecretKey)
	if err != nil {
		return 0, err
	}
	to, err := secret.NewBox(newKey)
	if err != nil {
		return 0, err
	}
	n, err := store.Reseal(ctx, a.DB, from, to, metaFingerprint, secret.Fingerprint(newKey))
	if err != nil {
		return 0, fmt.Errorf("secret rotate: nothing was changed: %w", err)
	}
	host, _ := os.Hostname()
	store.NewMeta(a.DB).Set(ctx, metaKeyOrigin, fmt.Sprintf("set by `postline secret rotate` on host %s, %s", //nolint:errcheck // a description only
		host, time.Now().UTC().Format(time.RFC3339)))
	a.SecretKey = newKey
	return n, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
