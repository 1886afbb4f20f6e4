import type { Config } from '../config.js';
import type { ActivityRow, EducationRow, NoteRow, PublicationRow, ResearchRow, SearchRow, TeamRow } from './queries.js';

export const pubTypeLabels: Record<string, string> = {
  'peer-reviewed': 'Peer-reviewed article', preprint: 'Preprint', report: 'Report', 'data-paper': 'Data paper', 'public-writing': 'Public writing',
};
export const provenanceLabels: Record<string, string> = { own: 'Own output', collaborative: 'Collaborative', affiliate: 'Affiliate' };
export const educationTypeLabels: Record<string, string> = {
  residency: 'Residency', fellowship: 'Fellowship', camp: 'Camp', 'teacher-development': 'Teacher development',
};
export const searchTypeLabels: Record<string, string> = {
  research: 'Research programme', instrument: 'Instrument', note: 'Lab note', education: 'Education programme', team: 'Team member', publication: 'Publication',
};

type Urls = Pick<Config, 'publicUrl' | 'baseUrl'>;

/** Where each kind of record lives: `url` on the site, `api_url` in this API. */
export const links = (c: Urls) => ({
  note: (slug: string) => ({ url: `${c.publicUrl}/notes/${slug}/`, api_url: `${c.baseUrl}/notes/${slug}/` }),
  publication: (id: number | string) => ({
    url: `${c.publicUrl}/publications/${id}/`, api_url: `${c.baseUrl}/publications/${id}/`, ris_url: `${c.publicUrl}/publications/${id}/cite.ris`,
  }),
  research: (slug: string) => ({ url: `${c.publicUrl}/research/${slug}/`, api_url: `${c.baseUrl}/research/${slug}/` }),
  team: (slug: string) => ({ url: `${c.publicUrl}/team/${slug}/` }),
  education: (slug: string) => ({ url: `${c.publicUrl}/education/${slug}/` }),
  instrument: (slug: string) => ({ url: `${c.publicUrl}/research/instruments/${slug}/` }),
});

const programmeLinks = (c: Urls, programmes: NoteRow['programmes']) =>
  programmes.map((p) => ({ slug: p.slug, title: p.title, ...links(c).research(p.slug) }));

// Items are built field by field: rows arrive as jsonb, whose keys come in no useful order.
export function shapeNote(c: Urls, row: NoteRow) {
  return {
    slug: row.slug, title: row.title, note_type: row.note_type, date: row.date, location: row.location, summary: row.summary,
    latitude: row.latitude, longitude: row.longitude, altitude_m: row.altitude_m, tags: row.tags,
    ...links(c).note(row.slug),
    programmes: programmeLinks(c, row.programmes),
    ...(row.body === undefined ? {} : { body: row.body }),
  };
}

export function shapePublication(c: Urls, row: PublicationRow) {
  return {
    id: row.id, title: row.title, authors: row.authors, journal: row.journal, year: row.year,
    pub_type: row.pub_type, pub_type_label: pubTypeLabels[row.pub_type],
    provenance: row.provenance, provenance_label: provenanceLabels[row.provenance],
    doi: row.doi, open_access_url: row.open_access_url, abstract: row.abstract, plain_language_summary: row.plain_language_summary,
    ...links(c).publication(row.id),
    linked_authors: row.linked_authors.map((a) => ({
      name: a.name, role: a.role, orcid: a.orcid, url: links(c).team(a.slug).url,
    })),
  };
}

export function shapeTeamMember(c: Urls, row: TeamRow) {
  return {
    name: row.name, slug: row.slug, role: row.role, orcid: row.orcid, research_areas: row.research_areas,
    linked_programmes: programmeLinks(c, row.linked_programmes), ...links(c).team(row.slug),
  };
}

export function shapeResearch(c: Urls, row: ResearchRow) {
  return {
    slug: row.slug, title: row.title, status: row.status, summary: row.summary,
    ...links(c).research(row.slug),
    instruments: row.instruments.map((i) => ({ slug: i.slug, name: i.name })),
    team: row.team.map((t) => ({ slug: t.slug, name: t.name, role: t.role })),
    publications: row.publications.map((p) => ({ id: p.id, title: p.title, year: p.year, api_url: links(c).publication(p.id).api_url })),
  };
}

export function shapeEducation(c: Urls, row: EducationRow) {
  return {
    slug: row.slug, title: row.title, programme_type: row.programme_type,
    programme_type_label: educationTypeLabels[row.programme_type], summary: row.summary, ...links(c).education(row.slug),
  };
}

export function shapeActivity(c: Urls, row: ActivityRow) {
  const where = row.type === 'note' ? links(c).note(row.key) : links(c).publication(row.key);
  return {
    type: row.type, type_label: row.type === 'note' ? 'Lab note' : 'Publication', title: row.title, date: row.date,
    summary: row.summary, url: where.url, api_url: where.api_url,
  };
}

export function shapeSearchResult(c: Urls, row: SearchRow) {
  const l = links(c);
  const url = {
    research: () => l.research(row.key).url, instrument: () => l.instrument(row.key).url, note: () => l.note(row.key).url,
    education: () => l.education(row.key).url, team: () => l.team(row.key).url, publication: () => l.publication(row.key).url,
  }[row.type]!();
  return { type: row.type, type_label: searchTypeLabels[row.type], title: row.title, url, summary: row.summary };
}
