import { z } from '../../http/zod.js';

/**
 * IANA's current names of the zones Node's Intl (ICU) still names by CLDR's older identifier, which CLDR
 * keeps stable after IANA renames a zone: a client writing Asia/Kolkata is answered with Asia/Kolkata, not
 * Asia/Calcutta. Only renames of the same place; zones IANA merged into another are left as they are.
 */
const renamedZones: Readonly<Record<string, string>> = {
  'Africa/Asmera': 'Africa/Asmara',
  'America/Buenos_Aires': 'America/Argentina/Buenos_Aires',
  'America/Catamarca': 'America/Argentina/Catamarca',
  'America/Coral_Harbour': 'America/Atikokan',
  'America/Cordoba': 'America/Argentina/Cordoba',
  'America/Godthab': 'America/Nuuk',
  'America/Indianapolis': 'America/Indiana/Indianapolis',
  'America/Jujuy': 'America/Argentina/Jujuy',
  'America/Louisville': 'America/Kentucky/Louisville',
  'America/Mendoza': 'America/Argentina/Mendoza',
  'Asia/Calcutta': 'Asia/Kolkata',
  'Asia/Katmandu': 'Asia/Kathmandu',
  'Asia/Rangoon': 'Asia/Yangon',
  'Asia/Saigon': 'Asia/Ho_Chi_Minh',
  'Atlantic/Faeroe': 'Atlantic/Faroe',
  'Europe/Kiev': 'Europe/Kyiv',
  'Pacific/Enderbury': 'Pacific/Kanton',
  'Pacific/Ponape': 'Pacific/Pohnpei',
  'Pacific/Truk': 'Pacific/Chuuk',
};

/** Each zone once, by its current IANA name: those Intl knows, renamed where IANA renamed them. */
export const zoneNames: readonly string[] = Intl.supportedValuesOf('timeZone').map((zone) => renamedZones[zone] ?? zone).sort();

/** Every spelling kept as written (in its proper case): the zones listed, and the older names Intl gives. */
const spellings = new Map([...zoneNames, ...Object.keys(renamedZones)].map((zone) => [zone.toLowerCase(), zone]));

const isUtc = (zone: string) => /^(Etc\/)?(UTC|GMT|UCT|Universal|Zulu|Greenwich)(\+0|-0|0)?$/i.test(zone);

/**
 * The name an IANA time zone is answered with, or null when there is none: written in any case, it is
 * given in its proper case (Asia/Kolkata and Asia/Calcutta each as itself, so a query kept in a snapshot
 * reads back as it was made); another alias (US/Eastern) as the zone it names (America/New_York); every
 * name of UTC as UTC.
 */
export function canonicalZone(name: string): string | null {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  if (isUtc(resolved)) return 'UTC';
  return spellings.get(name.toLowerCase()) ?? renamedZones[resolved] ?? resolved;
}

/**
 * An IANA time zone (Europe/Zurich, America/St_Johns, UTC) in any case, as canonicalZone names it. Only
 * names: an offset such as +05:30 is read by PostgreSQL as a POSIX zone, west positive, which no client means.
 */
export const tzSchema = z
  .string()
  .max(64)
  .superRefine((value, ctx) => {
    if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(value) || canonicalZone(value) === null) {
      ctx.addIssue({ code: 'custom', message: 'must be an IANA time zone name, such as Europe/Zurich or UTC' });
    }
  })
  .transform((value) => canonicalZone(value)!)
  // The zones the document lists are IANA's current names; their other names are taken too (Asia/Calcutta, US/Eastern).
  .openapi({ example: 'Europe/Zurich', default: 'UTC', enum: ['UTC', ...zoneNames.filter((zone) => zone !== 'UTC')], description: 'An IANA time zone: buckets are its calendar hours, days, weeks (from Monday) and months, `period_start` carries its offset then, and from_date and to_date are its local dates' });

/** The zone's offset from UTC at `at` (now when absent), in minutes east: 60 for Zurich in winter, -210 for Newfoundland. */
export function offsetMinutes(zone: string, at: Date = new Date()): number {
  const name = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? '';
  const match = /([+-])(\d{2}):(\d{2})/.exec(name);
  return match ? (match[1] === '-' ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3])) : 0;
}

/**
 * Whether the zone's offset now is not a whole number of hours (India's, Nepal's, Newfoundland's), so that
 * its hours cut the hourly rollup's and its buckets are read from the readings; UTC when absent.
 */
export const cutsUtcHoursNow = (zone: string | undefined) => zone !== undefined && offsetMinutes(zone) % 60 !== 0;

/** The zone an answer's buckets are of, other than UTC: UTC is the rollup levels' own calendar, an answer as without tz. */
export const bucketZone = (tz: string | undefined): string | undefined => (tz === 'UTC' ? undefined : tz);
