/** The RIS record (RIS is line-based, CRLF-terminated) for one publication, for reference managers. */
export function publicationRis(p: {
  id: number; title: string; authors: string; journal: string; year: number; pub_type: string;
  doi: string | null; open_access_url: string | null; abstract: string | null; url: string;
}): string {
  const type = p.pub_type === 'report' ? 'RPRT' : p.pub_type === 'data-paper' ? 'DATA' : 'JOUR';
  // A value must stay on its tag's line.
  const clean = (value: string) => value.replace(/\s*[\r\n]+\s*/g, ' ').trim();
  const lines: [string, string][] = [['TY', type], ['TI', clean(p.title)]];
  for (const author of p.authors.split(';').map((a) => clean(a)).filter(Boolean)) lines.push(['AU', author]);
  lines.push(['PY', String(p.year)]);
  if (p.journal) lines.push([type === 'JOUR' ? 'JO' : type === 'RPRT' ? 'PB' : 'T2', clean(p.journal)]);
  if (p.doi) lines.push(['DO', p.doi]);
  lines.push(['UR', p.open_access_url ?? (p.doi ? `https://doi.org/${p.doi}` : p.url)]);
  if (p.abstract) lines.push(['AB', clean(p.abstract)]);
  lines.push(['ID', `envmon-publication-${p.id}`]);
  return `${lines.map(([tag, value]) => `${tag}  - ${value}`).join('\r\n')}\r\nER  - \r\n`;
}
