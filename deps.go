//go:build tools

package tools

import (
	_ "github.com/emersion/go-message"
	_ "github.com/emersion/go-msgauth/dkim"
	_ "github.com/emersion/go-sasl"
	_ "github.com/emersion/go-smtp"
	_ "github.com/getkin/kin-openapi/openapi3"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/miekg/dns"
	_ "github.com/pdfcpu/pdfcpu/pkg/api"
	_ "github.com/pressly/goose/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/redis/go-redis/v9"
	_ "golang.org/x/image/font/opentype"
	_ "golang.org/x/net/idna"
	_ "golang.org/x/sync/singleflight"
	_ "modernc.org/sqlite"
)
