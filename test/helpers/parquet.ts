import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

/** A Parquet file as an independent reader (DuckDB) sees it. */
export type ParquetRead = {
  /** Each column's name, Parquet physical type and logical type, as the file's schema gives them. */
  schema: { name: string; type: string | null; logical: string | null }[];
  /** Rows as arrays in column order; timestamps as microseconds since 1970 (bigint), integers as bigint. */
  rows: unknown[][];
  columns: string[];
  metadata: Record<string, string>;
  rowGroups: number;
  /** Encodings of each column chunk, by column name. */
  encodings: Record<string, string>;
};

/**
 * Reads `bytes` with DuckDB, which shares no code with the writer: the schema, the key-value metadata,
 * the row groups, and every row, timestamps taken as exact microseconds.
 */
export async function readParquet(bytes: Uint8Array): Promise<ParquetRead> {
  const dir = await mkdtemp(join(tmpdir(), 'envmon-parquet-'));
  const file = join(dir, 'answer.parquet');
  const duck = await DuckDBInstance.create(':memory:');
  const db = await duck.connect();
  try {
    await writeFile(file, bytes);
    const path = `'${file}'`;
    const all = async (query: string) => (await db.runAndReadAll(query)).getRowObjectsJS();
    const schema = (await all(`select name, type, logical_type::varchar as logical from parquet_schema(${path}) where num_children is null`))
      .map((r) => ({ name: String(r.name), type: (r.type as string | null) ?? null, logical: (r.logical as string | null) ?? null }));
    const described = await all(`describe select * from read_parquet(${path})`);
    const select = described.map((c) =>
      String(c.column_type).startsWith('TIMESTAMP') ? `epoch_us("${String(c.column_name)}") as "${String(c.column_name)}"` : `"${String(c.column_name)}"`,
    );
    const reader = await db.runAndReadAll(`select ${select.join(', ')} from read_parquet(${path})`);
    const metadata = Object.fromEntries((await all(`select decode(key) as key, decode(value) as value from parquet_kv_metadata(${path})`))
      .map((r) => [String(r.key), String(r.value)]));
    const chunks = await all(`select row_group_id, path_in_schema, encodings from parquet_metadata(${path})`);
    return {
      schema,
      rows: reader.getRowsJS(),
      columns: reader.columnNames(),
      metadata,
      rowGroups: new Set(chunks.map((c) => c.row_group_id)).size,
      encodings: Object.fromEntries(chunks.map((c) => [String(c.path_in_schema), String(c.encodings)])),
    };
  } finally {
    db.closeSync();
    duck.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}
