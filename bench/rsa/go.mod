module github.com/postline/postline/bench/rsa

go 1.26

require filippo.io/bigmod v0.1.0

require golang.org/x/sys v0.11.0 // indirect
