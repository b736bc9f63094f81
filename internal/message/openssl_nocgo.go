//go:build openssl && !cgo

package message

// The openssl build signs through the system's libcrypto, with cgo: it
// needs CGO_ENABLED=1, a C compiler and OpenSSL's headers (libssl-dev).
// Without cgo the build stops here, on a name that says so, rather than
// on the missing libcrypto code.
var _ = buildTagOpensslNeeds_CGO_ENABLED_1
