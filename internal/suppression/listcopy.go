package suppression

import "context"

// followPage is how many rows a copy reads from the store at a time.
const followPage = 10000

// Pager reads one of the lists from the store a page at a time.
type Pager[T any] struct {
	// Page returns up to limit rows with id > after, in id order.
	Page func(ctx context.Context, after int64, limit int) ([]T, error)
	// Row is what a row holds: its id, what it is filed under (its
	// domain's id, or its account's), and its recipient.
	Row func(T) (id, under int64, recipient string)
}

// read feeds every row with id > after to yield and returns the highest
// id seen (after when none).
func (p Pager[T]) read(ctx context.Context, after int64, yield func(int64, string)) (int64, error) {
	for {
		rows, err := p.Page(ctx, after, followPage)
		if err != nil {
			return after, err
		}
		for _, r := range rows {
			id, under, recipient := p.Row(r)
			yield(under, recipient)
			after = id
		}
		if len(rows) < followPage {
			return after, nil
		}
	}
}

// ListCopy is one in-memory copy of the lists that a ListFollower keeps
// current: reload replaces it whole, since adds what came after an id.
type ListCopy struct {
	name   string
	last   int64 // the highest id read
	reload func(context.Context) (int64, error)
	since  func(context.Context, int64) (int64, error)
}

// Load replaces the copy whole from the store.
func (c *ListCopy) Load(ctx context.Context) error {
	last, err := c.reload(ctx)
	if err == nil {
		c.last = last
	}
	return err
}

// Set is an in-memory set of recipients, filed by an id, that is replaced
// whole or added to: the validation's bounce history.
type Set interface {
	Replace(each func(yield func(under int64, recipient string)) error) error
	Add(under int64, recipient string)
}

// SetCopy keeps set a copy of the rows p reads; name is for the logs.
func SetCopy[T any](name string, set Set, p Pager[T]) *ListCopy {
	return &ListCopy{name: name,
		reload: func(ctx context.Context) (int64, error) {
			var last int64
			err := set.Replace(func(yield func(int64, string)) error {
				var err error
				last, err = p.read(ctx, 0, yield)
				return err
			})
			return last, err
		},
		since: func(ctx context.Context, after int64) (int64, error) { return p.read(ctx, after, set.Add) }}
}

// IndexCopy keeps x a copy of the keys p reads (every entry's, whitelist
// included). Each read is marked with the write count taken before it
// (KeyIndex.Mark), so that the index trusts itself only while no write
// began since.
func IndexCopy[T any](x *KeyIndex, p Pager[T]) *ListCopy {
	follow := func(ctx context.Context, after int64,
		apply func(mark uint64, each func(yield func(int64, string)) error) error) (int64, error) {
		last := after
		mark := x.Mark()
		err := apply(mark, func(yield func(int64, string)) error {
			var err error
			last, err = p.read(ctx, after, yield)
			return err
		})
		return last, err
	}
	return &ListCopy{name: "suppression key index",
		reload: func(ctx context.Context) (int64, error) { return follow(ctx, 0, x.Replace) },
		since:  func(ctx context.Context, after int64) (int64, error) { return follow(ctx, after, x.Add) }}
}
