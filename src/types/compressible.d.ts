// compressible 2.x ships no types; the part used here.
declare module 'compressible' {
  /** true when the type is known to compress, false when known not to, undefined when unknown. */
  export default function compressible(type: string): boolean | undefined;
}
