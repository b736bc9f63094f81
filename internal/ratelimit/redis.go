package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Counter shared by every process using the same Redis.
type Redis struct {
	client *redis.Client
	prefix string
}

// NewRedis connects to url (redis://host:port/db) and checks it answers.
func NewRedis(ctx context.Context, url, prefix string) (*Redis, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis-url: %w", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("ratelimit: redis: %w", err)
	}
	return &Redis{client: c, prefix: prefix}, nil
}

// Incr implements Counter with INCRBY and a TTL set in the same round trip.
func (r *Redis) Incr(ctx context.Context, key string, windowStart time.Time, by int64, expire time.Duration) (int64, error) {
	k := r.prefix + key + ":" + strconv.FormatInt(windowStart.Unix(), 10)
	var incr *redis.IntCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.IncrBy(ctx, k, max(by, 1))
		p.ExpireNX(ctx, k, expire+time.Second)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("ratelimit: redis: %w", err)
	}
	return incr.Val(), nil
}

// Get implements Counter.
func (r *Redis) Get(ctx context.Context, key string, windowStart time.Time) (int64, error) {
	k := r.prefix + key + ":" + strconv.FormatInt(windowStart.Unix(), 10)
	n, err := r.client.Get(ctx, k).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ratelimit: redis: %w", err)
	}
	return n, nil
}

// decrScript takes one back without going below zero, in one step.
var decrScript = redis.NewScript(`if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then return redis.call('DECR', KEYS[1]) end return 0`)

// Decr implements Counter.
func (r *Redis) Decr(ctx context.Context, key string, windowStart time.Time) error {
	k := r.prefix + key + ":" + strconv.FormatInt(windowStart.Unix(), 10)
	if err := decrScript.Run(ctx, r.client, []string{k}).Err(); err != nil && err != redis.Nil {
		return fmt.Errorf("ratelimit: redis: %w", err)
	}
	return nil
}

// Reset implements Counter.
func (r *Redis) Reset(ctx context.Context, key string, windowStart time.Time) error {
	k := r.prefix + key + ":" + strconv.FormatInt(windowStart.Unix(), 10)
	if err := r.client.Del(ctx, k).Err(); err != nil {
		return fmt.Errorf("ratelimit: redis: %w", err)
	}
	return nil
}

// Close closes the client.
func (r *Redis) Close() error { return r.client.Close() }
