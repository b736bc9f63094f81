package submission

import (
	"errors"

	"github.com/emersion/go-sasl"
)

// loginServer is the server side of the LOGIN mechanism (draft-murchison-
// sasl-login), which go-sasl offers only as a client: many mail libraries
// and devices still use it.
type loginServer struct {
	step               int
	username, password string
	authenticate       func(username, password string) error
}

var _ sasl.Server = (*loginServer)(nil)

func (s *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch s.step {
	case 0:
		s.step++
		if len(response) > 0 { // an initial response is the username
			s.username = string(response)
			s.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 1:
		s.username, s.step = string(response), 2
		return []byte("Password:"), false, nil
	case 2:
		s.password, s.step = string(response), 3
		return nil, true, s.authenticate(s.username, s.password)
	}
	return nil, true, errors.New("unexpected client response")
}
