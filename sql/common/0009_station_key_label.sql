-- What holds a key (a device, the service's own demo feed), so that keys can be told apart in
-- `envmon keys list` and the demo feed can remove the keys it issued, even after a killed run.
alter table station_keys add column label text check (length(label) <= 200);
