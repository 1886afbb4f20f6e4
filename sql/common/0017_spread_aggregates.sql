-- Spread that stays exact when buckets are merged. Beside each metric's count and sum, a rollup keeps
-- the sum of squared deviations from the bucket's own mean (M2). Merging two buckets adds their M2s and
-- a term for the distance between their means (Chan, Golub and LeVeque's pairwise update), which is
-- what PostgreSQL's own variance aggregates do with their {N, sum, M2} state: float8_accum takes a value
-- (Youngs and Cramer), float8_combine merges two states, float8_stddev_samp finishes one. A plain sum of
-- squares would merge by addition too, but its variance (sum of squares less the squared sum over N)
-- cancels away most digits when the mean is large against the spread: pressure near 1000 hPa that moves
-- by one loses six of its sixteen digits over a month, and a constant channel shows a spread of noise.
-- These aggregates use the built-in functions on those states, so every rollup level and every read
-- merges exactly as stddev_samp over the raw readings would compute.

-- M2 of a state {N, sum, M2}.
create function envmon_state_m2(float8[]) returns float8 language sql immutable strict parallel safe as 'select $1[3]';

-- M2 of raw values (nulls skipped).
create aggregate envmon_m2(float8) (
  sfunc = float8_accum, stype = float8[], initcond = '{0,0,0}', finalfunc = envmon_state_m2,
  combinefunc = float8_combine, parallel = safe
);

-- M2 of buckets given as {count, sum, M2} each.
create aggregate envmon_m2_merge(float8[]) (
  sfunc = float8_combine, stype = float8[], initcond = '{0,0,0}', finalfunc = envmon_state_m2,
  combinefunc = float8_combine, parallel = safe
);

-- The sample standard deviation of buckets given as {count, sum, M2} each; null below two values.
create aggregate envmon_sd_merge(float8[]) (
  sfunc = float8_combine, stype = float8[], initcond = '{0,0,0}', finalfunc = float8_stddev_samp,
  combinefunc = float8_combine, parallel = safe
);
