import fc from 'fast-check';

// Readings as stations write them and as attackers do: the same fields, in every spelling JSON allows.
const space = fc.constantFrom('', '', '', ' ', '\n  ', '\t', '\r\n');
const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
const numberText = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -99_999_999, max: 99_999_999 }).chain((n) => fc.nat(4).map((k) => (n / 10 ** k).toFixed(k))) },
  fc.double({ min: -2e9, max: 2e9, noNaN: true }).map(String),
  fc.integer({ min: -2000, max: 2000 }).map(String),
  fc.tuple(fc.constantFrom('', '-'), fc.constantFrom('0', '1', '21', '999999999', '1000000000', '00'), digits(0, 20), fc.constantFrom('', 'e2', 'E-3', 'e+400', 'e-400'))
    .map(([sign, int, fraction, exponent]) => `${sign}${int}${fraction ? `.${fraction}` : ''}${exponent}`),
  fc.constantFrom('-0', '-0.0', '0.0000001', '0.000001', '1e2', '21.50', '5e-324', '0.1000000000000000055511151231257827', '60', '60.000000000000001', '-50', '1100.0', '1e400'),
);
const textValue = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'abcXYZ019 .-_/'), maxLength: 12 }).map((t) => JSON.stringify(t)),
  fc.constantFrom('"a\\u0000b"', '"caf\\u00e9"', '"café"', '"tab\\there"', '"\\ud83d"', '"\\"q\\""', `"${'v'.repeat(101)}"`, '"\\/"'),
);
const scalar = fc.oneof(numberText, textValue, fc.constantFrom('null', 'true', 'false'));
const anyValue: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    scalar,
    fc.array(tie('value'), { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
    fc.array(fc.tuple(fc.constantFrom('"a"', '"b"', '"1"', '"x y"'), tie('value')), { maxLength: 3 }).map((members) => `{${members.map(([k, v]) => `${k}:${v}`).join(',')}}`),
  ),
})).value;
const moduleData = fc.oneof(
  fc.constant('null'),
  fc.array(fc.tuple(fc.constantFrom('"fw"', '"rssi"', '"7"', '"rssi"', '"\\u0061"', '"deep"', '"__proto__"'), fc.oneof(scalar, anyValue)), { maxLength: 4 })
    .map((members) => `{${members.map(([k, v]) => `${k}:${v}`).join(',')}}`),
  fc.constantFrom('[]', '"text"', `{"blob":"${'z'.repeat(17_000)}"}`),
);
const timestamp = fc.oneof(
  { weight: 4, arbitrary: fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()) },
  fc.date({ min: new Date('1899-12-31T00:00:00Z'), max: new Date('2031-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2030-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().replace('.000Z', 'Z')),
  fc.constantFrom('2026-05-01T02:00:00+02:00', '2026-05-01 00:00', '2026-02-29T00:00:00Z', '2024-02-29T23:59:59Z', '2026-13-01T00:00:00Z',
    '2026-05-01T24:00:00Z', '2026-05-01T00:00:00.5Z', '2026-05-01t00:00:00Z', '1899-12-31T23:59:59Z', '9999-12-31T23:59:59.999Z'),
).map((t) => JSON.stringify(t));
const member = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.constantFrom('temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'pm10'), numberText) },
  fc.tuple(fc.constantFrom('temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'), fc.oneof({ weight: 6, arbitrary: numberText }, { weight: 1, arbitrary: scalar })),
  fc.tuple(fc.constantFrom('air_temp', 'air_hum', 'pressure'), numberText),
  fc.tuple(fc.constant('firmware_version'), fc.oneof(textValue, fc.constant('null'), fc.constant('3'))),
  fc.tuple(fc.constant('module_data'), moduleData),
  fc.tuple(fc.constantFrom('soil_temp', 'soil_moist', 'wind', '9lives', 'x\\u0041', 'quality_flag', 'station_id', 'timestamp'), fc.oneof(scalar, anyValue)),
);
/** One reading's JSON text, as stations write it and as attackers do. */
export const reading = fc
  .tuple(timestamp, fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, fc.constant(false)), fc.array(member, { maxLength: 8 }), space, space)
  .map(([ts, withTimestamp, members, before, after]) => {
    const all = withTimestamp ? [['timestamp', ts] as [string, string], ...members] : members;
    return `{${before}${all.map(([key, value]) => `${key.startsWith('"') ? key : `"${key}"`}${before}:${after}${value}`).join(`,${after}`)}${after}}`;
  });

