import { sql, type DatabaseTransactionConnection, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { contentFileSchema, type ContentFile } from './importSchema.js';

/** A content file that cannot be imported; `errors` name the JSON path of each problem. */
export class ContentImportError extends Error {
  constructor(readonly errors: string[]) {
    super(`the content file has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n${errors.join('\n')}`);
  }
}

export type ImportCounts = Record<keyof ContentFile, { created: number; updated: number }>;

const jsonPath = (path: (string | number)[]) =>
  path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${part}` : part), '') || '(top level)';

/** Validates a parsed content file; throws ContentImportError listing every problem by path. */
export function parseContentFile(input: unknown): ContentFile {
  const parsed = contentFileSchema.safeParse(input);
  if (!parsed.success) {
    throw new ContentImportError(parsed.error.issues.map((issue) => `${jsonPath(issue.path)}: ${issue.message}`));
  }
  const errors: string[] = [];
  const unique = (items: { key: string | number }[], name: string) => {
    const seen = new Set<string | number>();
    items.forEach(({ key }, index) => {
      if (seen.has(key)) errors.push(`${name}[${index}]: ${typeof key === 'number' ? 'id' : 'slug'} ${JSON.stringify(key)} appears twice`);
      seen.add(key);
    });
  };
  const file = parsed.data;
  unique(file.instruments.map((i) => ({ key: i.slug })), 'instruments');
  unique(file.team.map((i) => ({ key: i.slug })), 'team');
  unique(file.research.map((i) => ({ key: i.slug })), 'research');
  unique(file.education.map((i) => ({ key: i.slug })), 'education');
  unique(file.notes.map((i) => ({ key: i.slug })), 'notes');
  unique(file.publications.map((i) => ({ key: i.id })), 'publications');
  if (errors.length > 0) throw new ContentImportError(errors);
  return file;
}

const slugList = z.object({ slug: z.string() });

/** Every cross-reference must name a record of the file or of the database. */
async function checkReferences(tx: DatabaseTransactionConnection, file: ContentFile): Promise<void> {
  const known = async (table: string, inFile: { slug: string }[]) =>
    new Set([...(await tx.anyFirst(sql.type(slugList)`select slug from ${sql.identifier([table])}`)), ...inFile.map((r) => r.slug)]);
  const instruments = await known('instruments', file.instruments);
  const team = await known('team_members', file.team);
  const research = await known('research_programmes', file.research);
  const errors: string[] = [];
  const check = (set: Set<string>, what: string, refs: string[], path: string) =>
    refs.forEach((ref, i) => !set.has(ref) && errors.push(`${path}[${i}]: no ${what} with slug ${JSON.stringify(ref)}`));
  file.research.forEach((r, i) => {
    check(instruments, 'instrument', r.instruments, `research[${i}].instruments`);
    check(team, 'team member', r.team, `research[${i}].team`);
  });
  file.notes.forEach((n, i) => check(research, 'research programme', n.programmes, `notes[${i}].programmes`));
  file.publications.forEach((p, i) => {
    check(research, 'research programme', p.programmes, `publications[${i}].programmes`);
    p.linked_authors.forEach((a, j) => !team.has(a.team) && errors.push(`publications[${i}].linked_authors[${j}].team: no team member with slug ${JSON.stringify(a.team)}`));
  });
  if (errors.length > 0) throw new ContentImportError(errors);
}

const changed = z.object({ inserted: z.boolean() });

function count(rows: readonly { inserted: boolean }[]) {
  return { created: rows.filter((r) => r.inserted).length, updated: rows.filter((r) => !r.inserted).length };
}

/**
 * Creates or updates every record of the file in one transaction: all or nothing. Records are upserted
 * by slug (publications by id) and only rewritten when a field differs, so importing the same file again
 * changes nothing; a record's links (programmes, instruments, team, authors) become exactly the file's.
 * Throws ContentImportError.
 */
export async function importContent(pool: DatabasePool, file: ContentFile): Promise<ImportCounts> {
  return pool.transaction(async (tx) => {
    await checkReferences(tx, file);
    const rows = <T>(items: T[]) => sql.jsonb(items as never);
    const positioned = <T extends object>(items: T[]) => items.map((item, position) => ({ ...item, position }));

    const instruments = await tx.any(sql.type(changed)`
      insert into instruments as t (slug, name, description)
      select slug, name, description from jsonb_to_recordset(${rows(file.instruments)}) as x (slug text, name text, description text)
      on conflict (slug) do update set name = excluded.name, description = excluded.description
      where (t.name, t.description) is distinct from (excluded.name, excluded.description)
      returning xmax = 0 as inserted`);

    const team = await tx.any(sql.type(changed)`
      insert into team_members as t (slug, name, role, orcid, research_areas, bio, position)
      select slug, name, role, orcid, research_areas, bio, position
      from jsonb_to_recordset(${rows(positioned(file.team))}) as x (slug text, name text, role text, orcid text, research_areas text[], bio text, position int)
      on conflict (slug) do update set name = excluded.name, role = excluded.role, orcid = excluded.orcid,
        research_areas = excluded.research_areas, bio = excluded.bio, position = excluded.position
      where (t.name, t.role, t.orcid, t.research_areas, t.bio, t.position)
        is distinct from (excluded.name, excluded.role, excluded.orcid, excluded.research_areas, excluded.bio, excluded.position)
      returning xmax = 0 as inserted`);

    const research = await tx.any(sql.type(changed)`
      insert into research_programmes as t (slug, title, status, summary, position)
      select slug, title, status, summary, position
      from jsonb_to_recordset(${rows(positioned(file.research))}) as x (slug text, title text, status text, summary text, position int)
      on conflict (slug) do update set title = excluded.title, status = excluded.status, summary = excluded.summary, position = excluded.position
      where (t.title, t.status, t.summary, t.position) is distinct from (excluded.title, excluded.status, excluded.summary, excluded.position)
      returning xmax = 0 as inserted`);
    await replaceLinks(tx, 'programme_instruments', 'programme_slug', 'instrument_slug',
      file.research.map((r) => r.slug), file.research.flatMap((r) => r.instruments.map((s, i) => [r.slug, s, i] as const)));
    await replaceLinks(tx, 'programme_team', 'programme_slug', 'team_slug',
      file.research.map((r) => r.slug), file.research.flatMap((r) => r.team.map((s, i) => [r.slug, s, i] as const)));

    const education = await tx.any(sql.type(changed)`
      insert into education_programmes as t (slug, title, programme_type, summary, position)
      select slug, title, programme_type, summary, position
      from jsonb_to_recordset(${rows(positioned(file.education))}) as x (slug text, title text, programme_type text, summary text, position int)
      on conflict (slug) do update set title = excluded.title, programme_type = excluded.programme_type, summary = excluded.summary, position = excluded.position
      where (t.title, t.programme_type, t.summary, t.position) is distinct from (excluded.title, excluded.programme_type, excluded.summary, excluded.position)
      returning xmax = 0 as inserted`);

    const notes = await tx.any(sql.type(changed)`
      insert into notes as t (slug, title, note_type, date, location, summary, body, latitude, longitude, altitude_m, tags)
      select slug, title, note_type, date, location, summary, body, latitude, longitude, altitude_m, tags
      from jsonb_to_recordset(${rows(file.notes)}) as x (
        slug text, title text, note_type text, date date, location text, summary text, body text,
        latitude float8, longitude float8, altitude_m float8, tags text[])
      on conflict (slug) do update set title = excluded.title, note_type = excluded.note_type, date = excluded.date,
        location = excluded.location, summary = excluded.summary, body = excluded.body, latitude = excluded.latitude,
        longitude = excluded.longitude, altitude_m = excluded.altitude_m, tags = excluded.tags
      where (t.title, t.note_type, t.date, t.location, t.summary, t.body, t.latitude, t.longitude, t.altitude_m, t.tags)
        is distinct from (excluded.title, excluded.note_type, excluded.date, excluded.location, excluded.summary, excluded.body,
                          excluded.latitude, excluded.longitude, excluded.altitude_m, excluded.tags)
      returning xmax = 0 as inserted`);
    await replaceLinks(tx, 'note_programmes', 'note_slug', 'programme_slug',
      file.notes.map((n) => n.slug), file.notes.flatMap((n) => n.programmes.map((s, i) => [n.slug, s, i] as const)));

    const publications = await tx.any(sql.type(changed)`
      insert into publications as t (id, title, authors, journal, year, pub_type, provenance, doi, open_access_url, abstract, plain_language_summary)
      select id, title, authors, journal, year, pub_type, provenance, doi, open_access_url, abstract, plain_language_summary
      from jsonb_to_recordset(${rows(file.publications)}) as x (
        id int, title text, authors text, journal text, year int, pub_type text, provenance text, doi text,
        open_access_url text, abstract text, plain_language_summary text)
      on conflict (id) do update set title = excluded.title, authors = excluded.authors, journal = excluded.journal,
        year = excluded.year, pub_type = excluded.pub_type, provenance = excluded.provenance, doi = excluded.doi,
        open_access_url = excluded.open_access_url, abstract = excluded.abstract, plain_language_summary = excluded.plain_language_summary
      where (t.title, t.authors, t.journal, t.year, t.pub_type, t.provenance, t.doi, t.open_access_url, t.abstract, t.plain_language_summary)
        is distinct from (excluded.title, excluded.authors, excluded.journal, excluded.year, excluded.pub_type, excluded.provenance,
                          excluded.doi, excluded.open_access_url, excluded.abstract, excluded.plain_language_summary)
      returning xmax = 0 as inserted`);
    const ids = file.publications.map((p) => p.id);
    await tx.query(sql.type(z.object({}))`
      delete from publication_programmes l where l.publication_id = any(${sql.array(ids, 'int4')})
        and (l.publication_id, l.programme_slug) not in (
          select (x->>0)::int, x->>1 from jsonb_array_elements(${sql.jsonb(file.publications.flatMap((p) => p.programmes.map((s) => [p.id, s])))}) x)`);
    await tx.query(sql.type(z.object({}))`
      insert into publication_programmes (publication_id, programme_slug)
      select (x->>0)::int, x->>1 from jsonb_array_elements(${sql.jsonb(file.publications.flatMap((p) => p.programmes.map((s) => [p.id, s])))}) x
      on conflict do nothing`);
    await tx.query(sql.type(z.object({}))`
      delete from publication_authors l where l.publication_id = any(${sql.array(ids, 'int4')})
        and (l.publication_id, l.team_slug) not in (
          select (x->>0)::int, x->>1 from jsonb_array_elements(${sql.jsonb(file.publications.flatMap((p) => p.linked_authors.map((a) => [p.id, a.team])))}) x)`);
    await tx.query(sql.type(z.object({}))`
      insert into publication_authors as t (publication_id, team_slug, role, position)
      select (x->>0)::int, x->>1, x->>2, (x->>3)::int
      from jsonb_array_elements(${sql.jsonb(file.publications.flatMap((p) => p.linked_authors.map((a, i) => [p.id, a.team, a.role, i])))}) x
      on conflict (publication_id, team_slug) do update set role = excluded.role, position = excluded.position
      where (t.role, t.position) is distinct from (excluded.role, excluded.position)`);

    return {
      instruments: count(instruments), team: count(team), research: count(research),
      education: count(education), notes: count(notes), publications: count(publications),
    };
  });
}

/** Makes the links of the given parents exactly `links` ([parent, child, position]); unchanged links are left alone. */
async function replaceLinks(
  tx: DatabaseTransactionConnection,
  table: string,
  parentColumn: string,
  childColumn: string,
  parents: string[],
  links: (readonly [string, string, number])[],
): Promise<void> {
  const [t, parent, child] = [sql.identifier([table]), sql.identifier([parentColumn]), sql.identifier([childColumn])];
  const wanted = sql.jsonb(links.map((l) => [...l]));
  await tx.query(sql.type(z.object({}))`
    delete from ${t} l where l.${parent} = any(${sql.array(parents, 'text')})
      and (l.${parent}, l.${child}) not in (select x->>0, x->>1 from jsonb_array_elements(${wanted}) x)`);
  await tx.query(sql.type(z.object({}))`
    insert into ${t} as l (${parent}, ${child}, position)
    select x->>0, x->>1, (x->>2)::int from jsonb_array_elements(${wanted}) x
    on conflict (${parent}, ${child}) do update set position = excluded.position
    where l.position is distinct from excluded.position`);
}
