import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

export const pageSize = 20;

// Rows are built as jsonb by PostgreSQL (one query per list, nested links included); these schemas are
// what slonik checks each row against, and the types the shapes work from.
const linkedProgramme = z.object({ slug: z.string(), title: z.string() });

const noteRow = z.object({
  slug: z.string(), title: z.string(), note_type: z.string(), date: z.string(), location: z.string(), summary: z.string(),
  latitude: z.number().nullable(), longitude: z.number().nullable(), altitude_m: z.number().nullable(),
  tags: z.array(z.string()), programmes: z.array(linkedProgramme),
  body: z.string().optional(),
});
export type NoteRow = z.infer<typeof noteRow>;

const publicationRow = z.object({
  id: z.number(), title: z.string(), authors: z.string(), journal: z.string(), year: z.number(),
  pub_type: z.string(), provenance: z.string(), doi: z.string().nullable(), open_access_url: z.string().nullable(),
  abstract: z.string().nullable(), plain_language_summary: z.string().nullable(),
  linked_authors: z.array(z.object({ slug: z.string(), name: z.string(), role: z.string(), orcid: z.string().nullable() })),
});
export type PublicationRow = z.infer<typeof publicationRow>;

const teamRow = z.object({
  slug: z.string(), name: z.string(), role: z.string(), orcid: z.string().nullable(), research_areas: z.array(z.string()),
  linked_programmes: z.array(linkedProgramme),
});
export type TeamRow = z.infer<typeof teamRow>;

const researchRow = z.object({
  slug: z.string(), title: z.string(), status: z.string(), summary: z.string(),
  instruments: z.array(z.object({ slug: z.string(), name: z.string() })),
  team: z.array(z.object({ slug: z.string(), name: z.string(), role: z.string() })),
  publications: z.array(z.object({ id: z.number(), title: z.string(), year: z.number() })),
});
export type ResearchRow = z.infer<typeof researchRow>;

const educationRow = z.object({ slug: z.string(), title: z.string(), programme_type: z.string(), summary: z.string() });
export type EducationRow = z.infer<typeof educationRow>;

export type Page<T> = { total: number; items: T[] };
const pageOf = <T extends z.ZodTypeAny>(item: T) => z.object({ total: z.number(), items: z.array(item) });
const listOf = <T extends z.ZodTypeAny>(item: T) => z.object({ items: z.array(item) });

const where = (conditions: FragmentSqlToken[]) =>
  conditions.length ? sql.fragment`where ${sql.join(conditions, sql.fragment` and `)}` : sql.fragment``;

const noteColumns = sql.fragment`
  f.slug, f.title, f.note_type, f.date, f.location, f.summary, f.latitude, f.longitude, f.altitude_m, f.tags,
  coalesce((
    select jsonb_agg(jsonb_build_object('slug', r.slug, 'title', r.title) order by np.position)
    from note_programmes np join research_programmes r on r.slug = np.programme_slug
    where np.note_slug = f.slug
  ), '[]') as programmes`;

export type NoteFilter = { type?: string; programme?: string; from?: string; geotagged?: boolean };

/** Notes newest first, `limit` from `offset`, with the number of notes matching the filter; one query. */
async function findNotes(db: CommonQueryMethods, filter: NoteFilter, limit: number, offset: number): Promise<Page<NoteRow>> {
  const conditions: FragmentSqlToken[] = [];
  if (filter.type) conditions.push(sql.fragment`n.note_type = ${filter.type}`);
  if (filter.programme) {
    conditions.push(sql.fragment`exists (select 1 from note_programmes np where np.note_slug = n.slug and np.programme_slug = ${filter.programme})`);
  }
  if (filter.from) conditions.push(sql.fragment`n.date >= ${filter.from}::date`);
  if (filter.geotagged) conditions.push(sql.fragment`n.latitude is not null and n.longitude is not null`);
  return db.one(sql.type(pageOf(noteRow))`
    with filtered as not materialized (select n.* from notes n ${where(conditions)})
    select (select count(*) from filtered) as total,
      coalesce((select jsonb_agg(to_jsonb(p) order by p.date desc, p.slug) from (
        select ${noteColumns} from filtered f order by f.date desc, f.slug limit ${limit} offset ${offset}
      ) p), '[]') as items
  `);
}

/**
 * Where a page starts. A page number far past any list (up to the largest safe integer) still gets its
 * count, so that it is answered as past the last page: the offset is bounded to what bigint holds.
 */
const offsetOf = (page: number) => Math.min((page - 1) * pageSize, 2 ** 53);

/** One page of notes, newest first, with the number of notes matching the filter. */
export async function listNotes(db: CommonQueryMethods, filter: NoteFilter, page: number): Promise<Page<NoteRow>> {
  return findNotes(db, filter, pageSize, offsetOf(page));
}

/** Every geotagged note matching the filter, newest first, up to `limit`, with how many match. */
export async function listGeotaggedNotes(db: CommonQueryMethods, filter: Omit<NoteFilter, 'geotagged'>, limit: number): Promise<Page<NoteRow>> {
  return findNotes(db, { ...filter, geotagged: true }, limit, 0);
}

/** One note with its body, or null. */
export async function findNote(db: CommonQueryMethods, slug: string): Promise<NoteRow | null> {
  return db.maybeOneFirst(sql.type(z.object({ note: noteRow }))`
    select to_jsonb(p) as note from (select ${noteColumns}, f.body from notes f where f.slug = ${slug}) p
  `);
}

const publicationColumns = sql.fragment`
  f.id, f.title, f.authors, f.journal, f.year, f.pub_type, f.provenance, f.doi, f.open_access_url, f.abstract,
  f.plain_language_summary,
  coalesce((
    select jsonb_agg(jsonb_build_object('slug', t.slug, 'name', t.name, 'role', pa.role, 'orcid', t.orcid) order by pa.position)
    from publication_authors pa join team_members t on t.slug = pa.team_slug
    where pa.publication_id = f.id
  ), '[]') as linked_authors`;

export type PublicationFilter = { pubType?: string; provenance?: string; year?: number };

/** One page of publications, newest year first then id descending, with the total; one query. */
export async function listPublications(db: CommonQueryMethods, filter: PublicationFilter, page: number): Promise<Page<PublicationRow>> {
  const conditions: FragmentSqlToken[] = [];
  if (filter.pubType) conditions.push(sql.fragment`p.pub_type = ${filter.pubType}`);
  if (filter.provenance) conditions.push(sql.fragment`p.provenance = ${filter.provenance}`);
  if (filter.year !== undefined) conditions.push(sql.fragment`p.year = ${filter.year}`);
  return db.one(sql.type(pageOf(publicationRow))`
    with filtered as not materialized (select p.* from publications p ${where(conditions)})
    select (select count(*) from filtered) as total,
      coalesce((select jsonb_agg(to_jsonb(x)) from (
        select ${publicationColumns} from filtered f order by f.year desc, f.id desc limit ${pageSize} offset ${offsetOf(page)}
      ) x), '[]') as items
  `);
}

/** The largest value of an `integer` column: an id beyond it names no publication. */
const maxInteger = 2_147_483_647;

/** One publication with its linked authors, or null (also for an id no integer column can hold). */
export async function findPublication(db: CommonQueryMethods, id: number): Promise<PublicationRow | null> {
  if (id > maxInteger) return null;
  return db.maybeOneFirst(sql.type(z.object({ publication: publicationRow }))`
    select to_jsonb(x) as publication from (select ${publicationColumns} from publications f where f.id = ${id}) x
  `);
}

/** The team in the import's order, each with the programmes they work on. */
export async function listTeam(db: CommonQueryMethods): Promise<TeamRow[]> {
  return db.oneFirst(sql.type(listOf(teamRow))`
    select coalesce(jsonb_agg(to_jsonb(x) order by x.position, x.slug), '[]') as items from (
      select t.slug, t.name, t.role, t.orcid, t.research_areas, t.position,
        coalesce((
          select jsonb_agg(jsonb_build_object('slug', r.slug, 'title', r.title) order by r.position, r.slug)
          from programme_team pt join research_programmes r on r.slug = pt.programme_slug where pt.team_slug = t.slug
        ), '[]') as linked_programmes
      from team_members t
    ) x
  `);
}

const programmeColumns = sql.fragment`
  r.slug, r.title, r.status, r.summary, r.position,
  coalesce((select jsonb_agg(jsonb_build_object('slug', i.slug, 'name', i.name) order by pi.position)
    from programme_instruments pi join instruments i on i.slug = pi.instrument_slug where pi.programme_slug = r.slug), '[]') as instruments,
  coalesce((select jsonb_agg(jsonb_build_object('slug', t.slug, 'name', t.name, 'role', t.role) order by pt.position)
    from programme_team pt join team_members t on t.slug = pt.team_slug where pt.programme_slug = r.slug), '[]') as team,
  coalesce((select jsonb_agg(jsonb_build_object('id', p.id, 'title', p.title, 'year', p.year) order by p.year desc, p.id desc)
    from publication_programmes pp join publications p on p.id = pp.publication_id where pp.programme_slug = r.slug), '[]') as publications`;

export async function listResearch(db: CommonQueryMethods): Promise<ResearchRow[]> {
  return db.oneFirst(sql.type(listOf(researchRow))`
    select coalesce(jsonb_agg(to_jsonb(x) order by x.position, x.slug), '[]') as items
    from (select ${programmeColumns} from research_programmes r) x
  `);
}

export async function findResearch(db: CommonQueryMethods, slug: string): Promise<ResearchRow | null> {
  return db.maybeOneFirst(sql.type(z.object({ programme: researchRow }))`
    select to_jsonb(x) as programme from (select ${programmeColumns} from research_programmes r where r.slug = ${slug}) x
  `);
}

export async function listEducation(db: CommonQueryMethods): Promise<EducationRow[]> {
  return db.oneFirst(sql.type(listOf(educationRow))`
    select coalesce(jsonb_agg(to_jsonb(e) order by e.position, e.slug), '[]') as items
    from (select slug, title, programme_type, summary, position from education_programmes) e
  `);
}

const activityRow = z.object({ type: z.enum(['note', 'publication']), key: z.string(), title: z.string(), date: z.string(), summary: z.string() });
export type ActivityRow = z.infer<typeof activityRow>;

/**
 * Notes and publications merged newest first, in one query. A publication has only a year: it stands
 * at 1 January of that year.
 */
export async function listActivity(db: CommonQueryMethods, limit: number): Promise<readonly ActivityRow[]> {
  return db.any(sql.type(activityRow)`
    select * from (
      select 'note' as type, slug as key, title, date, summary from notes
      union all
      select 'publication', id::text, title, make_date(year, 1, 1), coalesce(plain_language_summary, abstract, '') from publications
    ) a
    order by date desc, type, key desc
    limit ${limit}
  `);
}

const searchRow = z.object({ type: z.string(), key: z.string(), title: z.string(), summary: z.string(), rank: z.number() });
export type SearchRow = z.infer<typeof searchRow>;

/**
 * Full-text search across programmes, instruments, notes, education, team and publications: each table's
 * stored tsvector and GIN index, a websearch-style query with English stemming, ranked by ts_rank.
 */
export async function searchContent(db: CommonQueryMethods, q: string, limit: number): Promise<readonly SearchRow[]> {
  return db.any(sql.type(searchRow)`
    with query as (select envmon_search_query(${q}) as q)
    select type, key, title, summary, rank from (
      select 'research' as type, slug as key, title, summary, ts_rank(search, q) as rank from research_programmes, query where search @@ q
      union all
      select 'instrument', slug, name, description, ts_rank(search, q) from instruments, query where search @@ q
      union all
      select 'note', slug, title, summary, ts_rank(search, q) from notes, query where search @@ q
      union all
      select 'education', slug, title, summary, ts_rank(search, q) from education_programmes, query where search @@ q
      union all
      select 'team', slug, name, role, ts_rank(search, q) from team_members, query where search @@ q
      union all
      select 'publication', id::text, title, coalesce(plain_language_summary, abstract, ''), ts_rank(search, q) from publications, query where search @@ q
    ) hits
    order by rank desc, type, key
    limit ${limit}
  `);
}
