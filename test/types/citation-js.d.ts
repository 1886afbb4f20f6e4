// citation.js ships no type declarations; the tests use Cite.async(text).data only.
declare module '@citation-js/core' {
  export const Cite: { async(input: string): Promise<{ data: unknown[] }> };
}
declare module '@citation-js/plugin-ris';
