package live

// withoutManagedFields returns item, one object of a LIST as JSON, without
// its metadata.managedFields member, cut out of the text: the object is
// held encoded until its evaluation, and server-side apply's field
// ownership is often half of it. item is returned as it is when it has no
// such member, or is not a JSON object this scanner reads to the end (the
// decoding then removes the field, or reports the error).
func withoutManagedFields(item []byte) []byte {
	from, to, ok := managedFieldsSpan(item)
	if !ok {
		return item
	}
	out := make([]byte, 0, len(item)-(to-from))
	out = append(out, item[:from]...)
	return append(out, item[to:]...)
}

// managedFieldsSpan finds the bytes to cut: the member "managedFields" of
// the top-level member "metadata", with the comma that separates it from
// the member before it, or, when it is the first, from the member after.
func managedFieldsSpan(b []byte) (from, to int, ok bool) {
	s := &scanner{b: b}
	found := false
	err := s.object(func(key []byte) (bool, error) {
		if string(key) != "metadata" || found {
			return false, nil
		}
		s.space()
		if s.peek() != '{' {
			return false, nil
		}
		found = true
		return true, s.object(func(key []byte) (bool, error) {
			// Read before the value: skipping it moves both.
			start, comma := s.memberStart, s.commaBefore
			if string(key) != "managedFields" || ok {
				return false, nil
			}
			if err := s.value(); err != nil {
				return true, err
			}
			from, to, ok = comma, s.i, true
			if comma == start {
				// The first member: no comma before it, so the one after
				// it goes too, with the space before the next key (looked
				// ahead: the object's own loop reads that comma).
				j := skipSpace(s.b, s.i)
				if j < len(s.b) && s.b[j] == ',' {
					to = skipSpace(s.b, j+1)
				}
			}
			return true, nil
		})
	})
	if err != nil || !ok || !s.end() {
		return 0, 0, false
	}
	return from, to, true
}

// scanner reads JSON text just well enough to find members: it checks the
// structure (braces, brackets, strings, commas, colons), not the literals.
type scanner struct {
	b []byte
	i int
	// memberStart is where the current member's key starts; commaBefore
	// where the comma before it is (the member's own start for the first).
	memberStart, commaBefore int
}

type syntaxError struct{}

func (syntaxError) Error() string { return "not a JSON text the scanner reads" }

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) space() { s.i = skipSpace(s.b, s.i) }

// skipSpace returns where the space from i in b ends.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// end reports whether only space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// object reads an object, calling member with each key (the scanner just
// after its colon); member reads the value itself and returns true, or
// returns false to have it skipped.
func (s *scanner) object(member func(key []byte) (bool, error)) error {
	s.space()
	if s.peek() != '{' {
		return syntaxError{}
	}
	s.i++
	s.space()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	comma := -1
	for {
		s.space()
		start := s.i
		key, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if s.peek() != ':' {
			return syntaxError{}
		}
		s.i++
		s.memberStart, s.commaBefore = start, comma
		if comma < 0 {
			s.commaBefore = start
		}
		read, err := member(key)
		if err != nil {
			return err
		}
		if !read {
			if err := s.value(); err != nil {
				return err
			}
		}
		s.space()
		switch s.peek() {
		case ',':
			comma = s.i
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return syntaxError{}
		}
	}
}

// str reads a string and returns its text between the quotes, escapes
// as they are.
func (s *scanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, syntaxError{}
	}
	start := s.i + 1
	for s.i = start; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return s.b[start : s.i-1], nil
		}
	}
	return nil, syntaxError{}
}

// value skips one value.
func (s *scanner) value() error {
	s.space()
	switch s.peek() {
	case '{':
		return s.object(func([]byte) (bool, error) { return false, nil })
	case '[':
		s.i++
		s.space()
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.value(); err != nil {
				return err
			}
			s.space()
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return syntaxError{}
			}
		}
	case '"':
		_, err := s.str()
		return err
	case 0:
		return syntaxError{}
	}
	// A literal or a number: up to the next delimiter.
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if s.i == start {
				return syntaxError{}
			}
			return nil
		case '{', '[', '"', ':':
			return syntaxError{}
		}
		s.i++
	}
	return nil
}
