import { addRoute, type Api } from '../http/route.js';
import { cachePolicy } from '../http/cachePolicy.js';
import { paginate } from '../http/pagination.js';
import { notFound } from '../http/problem.js';
import { z } from '../http/zod.js';
import { featureCollectionSchema, shapeFeatureCollection } from '../formats/geojson.js';
import {
  findNote, findPublication, findResearch, listActivity, listEducation, listGeotaggedNotes, listNotes, listPublications, listResearch,
  listTeam, pageSize, searchContent,
} from './queries.js';
import { publicationRis } from './ris.js';
import {
  activityQuerySchema, idParamsSchema, notesQuerySchema, publicationsQuerySchema, searchQuerySchema, slugParamsSchema,
} from './schema.js';
import {
  shapeActivity, shapeEducation, shapeNote, shapePublication, shapeResearch, shapeSearchResult, shapeTeamMember,
} from './shape.js';

const maxSearchResults = 20;
/** The most notes one GeoJSON answer holds: far above the organisation's notes, and a bound on the answer's size. */
const maxNoteFeatures = 5000;

const programmeLink = z.object({ slug: z.string(), title: z.string(), url: z.string(), api_url: z.string() });
const noteSchema = z
  .object({
    slug: z.string(), title: z.string(), note_type: z.string(), date: z.string(), location: z.string(), summary: z.string(),
    latitude: z.number().nullable(), longitude: z.number().nullable(), altitude_m: z.number().nullable(), tags: z.array(z.string()),
    url: z.string(), api_url: z.string(), programmes: z.array(programmeLink),
  })
  .openapi('LabNote');
const publicationSchema = z
  .object({
    id: z.number().int(), title: z.string(), authors: z.string(), journal: z.string(), year: z.number().int(),
    pub_type: z.string(), pub_type_label: z.string(), provenance: z.string(), provenance_label: z.string(),
    doi: z.string().nullable(), open_access_url: z.string().nullable(), abstract: z.string().nullable(),
    plain_language_summary: z.string().nullable(), url: z.string(), api_url: z.string(), ris_url: z.string(),
    linked_authors: z.array(z.object({ name: z.string(), role: z.string(), orcid: z.string().nullable(), url: z.string() })),
  })
  .openapi('Publication');
const noteFeaturesSchema = featureCollectionSchema
  .extend({
    numberMatched: z.number().int().openapi({ description: 'Geotagged notes matching the filters' }),
    numberReturned: z.number().int().openapi({ description: 'Features in this answer' }),
  })
  .openapi('NoteFeatureCollection');
const page = <T extends z.ZodTypeAny>(item: T, name: string) =>
  z
    .object({
      count: z.number().int(), page: z.number().int(), total_pages: z.number().int(),
      next: z.string().nullable(), previous: z.string().nullable(), results: z.array(item),
    })
    .openapi(name);
const list = (item: z.ZodTypeAny, name: string) => z.object({ count: z.number().int(), results: z.array(item) }).openapi(name);
const teamSchema = z
  .object({
    name: z.string(), slug: z.string(), role: z.string(), orcid: z.string().nullable(), research_areas: z.array(z.string()),
    linked_programmes: z.array(programmeLink), url: z.string(),
  })
  .openapi('TeamMember');
const researchSchema = z
  .object({
    slug: z.string(), title: z.string(), status: z.string(), summary: z.string(), url: z.string(), api_url: z.string(),
    instruments: z.array(z.object({ slug: z.string(), name: z.string() })),
    team: z.array(z.object({ slug: z.string(), name: z.string(), role: z.string() })),
    publications: z.array(z.object({ id: z.number().int(), title: z.string(), year: z.number().int(), api_url: z.string() })),
  })
  .openapi('ResearchProgramme');
const educationSchema = z
  .object({ slug: z.string(), title: z.string(), programme_type: z.string(), programme_type_label: z.string(), summary: z.string(), url: z.string() })
  .openapi('EducationProgramme');
const activitySchema = z
  .object({ type: z.string(), type_label: z.string(), title: z.string(), date: z.string(), summary: z.string(), url: z.string(), api_url: z.string() })
  .openapi('ActivityItem');
const searchResultSchema = z
  .object({ type: z.string(), type_label: z.string(), title: z.string(), url: z.string(), summary: z.string() })
  .openapi('SearchResult');

export function addContentRoutes(api: Api): void {
  const { config, db } = api.deps;

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/notes/', operationId: 'listNotes', cache: cachePolicy.content, tag: 'Content',
      summary: 'Lab notes, newest first, 20 a page; or every geotagged note as GeoJSON',
      description: 'JSON: 20 notes a page; next and previous are also sent in a Link header. ' +
        `\`output=geojson\`: every geotagged note matching the filters in one RFC 7946 FeatureCollection (application/geo+json), newest first, at most ${maxNoteFeatures}, not paged (\`page\` is ignored), so that GIS tools (GDAL, QGIS, geopandas) read them all in one request. ` +
        '`numberMatched` and `numberReturned` say how many notes match and how many were returned; narrow with the filters when they differ.',
      query: notesQuerySchema,
      responses: {
        200: { description: 'A page of notes, or every geotagged note as GeoJSON', content: { 'application/json': page(noteSchema, 'NotePage'), 'application/geo+json': noteFeaturesSchema } },
        404: { description: 'The page is past the last one' },
      },
    },
    async (ctx, { query }) => {
      const filter = { type: query.type, programme: query.programme, from: query.from_date };
      if (query.output === 'geojson') {
        const found = await listGeotaggedNotes(db.pool, filter, maxNoteFeatures);
        const notes = found.items.map((n) => shapeNote(config, n));
        ctx.type = 'application/geo+json';
        ctx.body = { ...shapeFeatureCollection(notes, (n) => n.slug), numberMatched: found.total, numberReturned: notes.length };
        return;
      }
      const found = await listNotes(db.pool, filter, query.page);
      ctx.body = paginate(ctx, config.publicUrl, found.total, query.page, pageSize, found.items.map((n) => shapeNote(config, n)));
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/notes/:slug/', operationId: 'getNote', cache: cachePolicy.content, tag: 'Content',
      summary: 'One lab note with its Markdown body',
      params: slugParamsSchema,
      responses: { 200: { description: 'The note', content: { 'application/json': noteSchema.extend({ body: z.string() }) } }, 404: { description: 'No such note' } },
    },
    async (ctx, { params }) => {
      const note = await findNote(db.pool, params.slug);
      if (!note) throw notFound(`no lab note '${params.slug}'`);
      ctx.body = shapeNote(config, note);
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/publications/', operationId: 'listPublications', cache: cachePolicy.content, tag: 'Content',
      summary: 'Publications, newest year first, 20 a page',
      query: publicationsQuerySchema,
      responses: { 200: { description: 'A page of publications', content: { 'application/json': page(publicationSchema, 'PublicationPage') } }, 404: { description: 'The page is past the last one' } },
    },
    async (ctx, { query }) => {
      const found = await listPublications(db.pool, { pubType: query.pub_type, provenance: query.provenance, year: query.year }, query.page);
      ctx.body = paginate(ctx, config.publicUrl, found.total, query.page, pageSize, found.items.map((p) => shapePublication(config, p)));
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/publications/:id/', operationId: 'getPublication', cache: cachePolicy.content, tag: 'Content',
      summary: 'One publication with its abstract and linked authors',
      params: idParamsSchema,
      responses: { 200: { description: 'The publication', content: { 'application/json': publicationSchema } }, 404: { description: 'No such publication' } },
    },
    async (ctx, { params }) => {
      const publication = await findPublication(db.pool, params.id);
      if (!publication) throw notFound(`no publication with id ${params.id}`);
      ctx.body = shapePublication(config, publication);
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/publications/:id/cite.ris', operationId: 'citePublication', cache: cachePolicy.content, tag: 'Content',
      summary: 'RIS citation file of a publication, for reference managers',
      params: idParamsSchema,
      responses: { 200: { description: 'The RIS record', content: { 'application/x-research-info-systems': z.string() } }, 404: { description: 'No such publication' } },
    },
    async (ctx, { params }) => {
      const publication = await findPublication(db.pool, params.id);
      if (!publication) throw notFound(`no publication with id ${params.id}`);
      const shaped = shapePublication(config, publication);
      ctx.type = 'application/x-research-info-systems; charset=utf-8';
      ctx.set('Content-Disposition', `attachment; filename="envmon-publication-${params.id}.ris"`);
      ctx.body = publicationRis(shaped);
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/team/', operationId: 'listTeam', cache: cachePolicy.content, tag: 'Content', summary: 'The team, in the order the organisation gives',
      responses: { 200: { description: 'The team', content: { 'application/json': list(teamSchema, 'Team') } } },
    },
    async (ctx) => {
      const results = (await listTeam(db.pool)).map((m) => shapeTeamMember(config, m));
      ctx.body = { count: results.length, results };
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/research/', operationId: 'listResearch', cache: cachePolicy.content, tag: 'Content',
      summary: 'Research programmes with their instruments, team and publications',
      responses: { 200: { description: 'The programmes', content: { 'application/json': list(researchSchema, 'ResearchProgrammes') } } },
    },
    async (ctx) => {
      const results = (await listResearch(db.pool)).map((r) => shapeResearch(config, r));
      ctx.body = { count: results.length, results };
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/research/:slug/', operationId: 'getResearch', cache: cachePolicy.content, tag: 'Content', summary: 'One research programme',
      params: slugParamsSchema,
      responses: { 200: { description: 'The programme', content: { 'application/json': researchSchema } }, 404: { description: 'No such programme' } },
    },
    async (ctx, { params }) => {
      const programme = await findResearch(db.pool, params.slug);
      if (!programme) throw notFound(`no research programme '${params.slug}'`);
      ctx.body = shapeResearch(config, programme);
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/education/', operationId: 'listEducation', cache: cachePolicy.content, tag: 'Content',
      summary: 'Education programmes: residencies, fellowships, camps, teacher development',
      responses: { 200: { description: 'The programmes', content: { 'application/json': list(educationSchema, 'EducationProgrammes') } } },
    },
    async (ctx) => {
      const results = (await listEducation(db.pool)).map((e) => shapeEducation(config, e));
      ctx.body = { count: results.length, results };
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/activity/', operationId: 'listActivity', cache: cachePolicy.content, tag: 'Content',
      summary: 'Lab notes and publications merged, newest first',
      query: activityQuerySchema,
      responses: { 200: { description: 'The feed', content: { 'application/json': list(activitySchema, 'Activity') } } },
    },
    async (ctx, { query }) => {
      const results = (await listActivity(db.pool, query.limit)).map((a) => shapeActivity(config, a));
      ctx.body = { count: results.length, results };
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/search/', operationId: 'search', cache: cachePolicy.content, tag: 'Content',
      summary: 'Full-text search over programmes, instruments, notes, education, team and publications',
      description: 'English stemming ("measuring" finds "measurement"), websearch syntax, ranked by relevance, at most 20 results.',
      query: searchQuerySchema,
      responses: {
        200: { description: 'The results', content: { 'application/json': z.object({ query: z.string(), count: z.number().int(), results: z.array(searchResultSchema) }).openapi('SearchResults') } },
      },
    },
    async (ctx, { query }) => {
      const results = (await searchContent(db.pool, query.q, maxSearchResults)).map((r) => shapeSearchResult(config, r));
      ctx.body = { query: query.q, count: results.length, results };
    },
  );
}
