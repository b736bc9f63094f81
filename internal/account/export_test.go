package account

import "time"

// SetVerifyForTest replaces the password check, so a test can count the
// checks running at once and hold them.
func SetVerifyForTest(s *Service, f func(password, phc string) bool) { s.verify = f }

// SetPasswordGateForTest bounds the checks with a wait shorter than the
// real 2 s.
func SetPasswordGateForTest(s *Service, n int, wait time.Duration) { s.gate = newPasswordGate(n, wait) }

// VerifyPassword is the real check, for a test's replacement to call.
var VerifyPassword = verifyPassword
