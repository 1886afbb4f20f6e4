-- Every mean and standard deviation the service gives is defined here, once, and is the same to the bit
-- whatever order the readings are read, merged or returned in: each value is taken as the decimal it
-- reads as, the sums are exact, and the figure is rounded to a double once.
-- - A value's decimal is the shortest one that reads back as the stored double (PostgreSQL's float8
--   output; a cast straight to numeric would keep only 15 digits): the number a station sent, as sent.
-- - count, sum and sum of squares add exactly in numeric, so a rollup of rollups, a union and a GROUP BY
--   over the readings reach the same sums in any order.
-- - The mean is the sum over the count and the sample variance (n * squares - sum^2) / (n * (n - 1)),
--   each quotient taken to at least 40 decimal places and the standard deviation its square root to as
--   many, then rounded to the nearest double.
-- These are part of the data model rather than function bodies kept in sql/functions: the rollups are
-- built on envmon_decimal, and a change to any of the three would change published figures and the
-- bytes of snapshots, which only a migration (and a new definition beside this one) may do.

create function envmon_decimal(double precision) returns numeric
  language sql immutable strict parallel safe
  as $$ select $1::text::numeric $$;

create function envmon_mean(n numeric, total numeric) returns double precision
  language sql immutable parallel safe
  as $$ select case when n > 0 then (round(total, greatest(scale(total), 40)) / n)::double precision end $$;

create function envmon_sd(n numeric, total numeric, squares numeric) returns double precision
  language sql immutable parallel safe
  as $$ select case when n > 1 then
    sqrt(round(n * squares - total * total, greatest(scale(squares), 40)) / (n * (n - 1)))::double precision end $$;
