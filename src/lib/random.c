// SPDX-License-Identifier: GPL-2.0
/*
 * A small, fast, seedable generator (splitmix64 to seed, xoshiro256** to
 * draw) so that runs are reproducible from their seed.
 */
#include <pcplab/random.h>

static u64 splitmix64(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Seed @r from @seed. */
void prandom_seed(struct prandom *r, u64 seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline u64 rotl(u64 x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* The next 64 random bits. */
u64 prandom_u64(struct prandom *r)
{
	u64 *s = r->s;
	u64 result = rotl(s[1] * 5, 7) * 9;
	u64 t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* A uniform integer in [0, n). */
u64 prandom_below(struct prandom *r, u64 n)
{
	return n ? prandom_u64(r) % n : 0;
}
