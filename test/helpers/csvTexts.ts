import fc from 'fast-check';

// Columns a station's CSV may have: fields, channels, the keys the service decides, and some that are
// never read in place (an alias, module_data, names JSON or objects treat apart, spaces to trim).
const columnNames = [
  'temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'co2_ppm', 'uv_index', 'altitude_m', 'firmware_version',
  'soil_temp', 'wind_dir', 'quality_flag', 'station_id', ' pm10', 'air_temp', 'module_data', '1st', '__proto__', 'ünit', 'temperature_c ',
];

const timestamps = fc.oneof(
  fc.date({ min: new Date('1890-01-01T00:00:00Z'), max: new Date('2031-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2029-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().replace('.000Z', 'Z')),
  fc.constantFrom('2026-02-29T00:00:00Z', '2024-02-29T12:00:00Z', '2026-05-01T24:00:00Z', '2026-05-01T00:00:00+02:00', '2026-05-01 00:00', 'yesterday', '', '2026-05-01T00:00:00.5Z'),
);
const numbers = fc.oneof(
  fc.double({ min: -2e9, max: 2e9, noNaN: true, noDefaultInfinity: true }).map(String),
  fc.integer({ min: -2000, max: 2000 }).map(String),
  fc.tuple(fc.integer({ min: -999, max: 999 }), fc.integer({ min: 0, max: 9999 })).map(([i, f]) => `${i}.${f}`),
  fc.constantFrom('', '', '0', '-0', '1.50', '1e2', '-1.5E+3', '007', '-.5', '.5', ' 1.5', '1.5 ', 'NaN', 'warm', '0.000001', '0.0000001', '999999999', '1000000000', '12345678901234567', '0.1000000000000000055511151231257827', 'é'),
);
const texts = fc.oneof(
  fc.constantFrom('', '1.4.2', 'fw-9', 'NE', 'x y', 'é', '\u0001', '12.5', 'a'.repeat(101), 'a'.repeat(100)),
  fc.string({ maxLength: 12 }).map((s) => s.replace(/[",\r\n]/g, '')),
);

/** A quote-free CSV body: a header with a timestamp, rows of fields in the column's kind (some of the wrong count). */
export const csvBody = fc
  .tuple(
    fc.shuffledSubarray(columnNames, { minLength: 0, maxLength: 8 }),
    fc.nat(8),
    fc.boolean(),
    fc.boolean(),
  )
  .chain(([names, at, crlf, finalBreak]) => {
    const header = [...names.slice(0, at), 'timestamp', ...names.slice(at)];
    const field = (name: string) => (name === 'timestamp' ? timestamps : name === 'firmware_version' || name === 'wind_dir' || name === 'quality_flag' || name === 'station_id' ? texts : numbers);
    const row = fc.tuple(fc.tuple(...header.map(field)), fc.integer({ min: -12, max: 12 })).map(([fields, change]) =>
      change === -12 ? '' : change === -11 ? fields.slice(1).join(',') : change === 12 ? `${fields.join(',')},1` : fields.join(','));
    return fc.array(row, { minLength: 0, maxLength: 12 }).map((rows) => {
      const newline = crlf ? '\r\n' : '\n';
      return [header.join(','), ...rows].join(newline) + (finalBreak ? newline : '');
    });
  });
