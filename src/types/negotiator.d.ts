// negotiator 1.x ships no types; the parts used here.
declare module 'negotiator' {
  export default class Negotiator {
    constructor(request: { headers: Record<string, string | string[] | undefined> });
    /** The most preferred of `available` the request accepts; ties go to the order of `preferred`. */
    encoding(available?: readonly string[], options?: { preferred?: readonly string[] }): string | undefined;
  }
}
