import { PassThrough } from 'node:stream';
import { ByteWriter, ParquetWriter, type KeyValue, type SchemaElement } from 'hyparquet-writer';
import type { ColumnValues } from '../db/copyBinary.js';

export const parquetType = 'application/vnd.apache.parquet';

/** A column of a Parquet file: its name and Parquet type; every value column may be null. */
export type ParquetColumn = { name: string; kind: 'timestamp' | 'double' | 'int32' | 'int64' | 'string'; required?: boolean };

function schemaElement({ name, kind, required }: ParquetColumn): SchemaElement {
  const repetition_type = required ? 'REQUIRED' : 'OPTIONAL';
  switch (kind) {
    // Microseconds since 1970 in UTC: the unit PostgreSQL keeps, so no reading loses precision.
    case 'timestamp':
      return { name, repetition_type, type: 'INT64', converted_type: 'TIMESTAMP_MICROS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' } };
    case 'double': return { name, repetition_type, type: 'DOUBLE' };
    case 'int32': return { name, repetition_type, type: 'INT32' };
    case 'int64': return { name, repetition_type, type: 'INT64' };
    case 'string': return { name, repetition_type, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };
  }
}

/**
 * Bytes the writer makes, handed to a stream after each row group: the row group is the unit the file
 * is written in, so memory holds one whatever the file's length. The writer waits while the stream's
 * reader is behind (backpressure), and stops when the stream is destroyed (a client gone).
 */
class StreamWriter extends ByteWriter {
  constructor(private readonly into: PassThrough) {
    super(1 << 20);
  }

  flush(): Promise<void> | undefined {
    if (this.into.destroyed) throw new Error('Parquet answer abandoned by the client');
    // A copy: the writer's buffer is written over by the next row group.
    const more = this.into.write(Buffer.from(new Uint8Array(this.buffer, 0, this.index)));
    this.index = 0;
    if (more) return undefined;
    return new Promise((resolve) => {
      const go = () => {
        this.into.off('drain', go);
        this.into.off('close', go);
        resolve();
      };
      this.into.on('drain', go);
      this.into.on('close', go);
    });
  }

  override finish(): void {
    this.flush();
  }
}

const writerOf = (writer: ByteWriter, columns: readonly ParquetColumn[], metadata: Record<string, string>) =>
  new ParquetWriter({
    writer,
    schema: [{ name: 'schema', num_children: columns.length }, ...columns.map(schemaElement)],
    codec: 'SNAPPY',
    kvMetadata: Object.entries(metadata).map(([key, value]): KeyValue => ({ key, value })),
    createdBy: 'envmon',
  });

/** One row group's values as the writer takes them; a column of strings (a quality flag, a station) is dictionary-encoded. */
const columnData = (columns: readonly ParquetColumn[], values: readonly ColumnValues[]) =>
  columns.map((column, c) => ({
    name: column.name,
    data: values[c]!,
    ...(column.kind === 'string' ? { encoding: 'RLE_DICTIONARY' as const } : {}),
  }));

/**
 * A Parquet file written row group by row group into `body`: `write` adds one row group (awaiting the
 * reader when it is behind), `end` writes the footer, with `metadata` as the file's key-value metadata,
 * and ends the body. Values are compressed with Snappy, which every Parquet reader reads.
 */
export function parquetStream(columns: readonly ParquetColumn[], metadata: Record<string, string>) {
  const body = new PassThrough();
  const parquet = writerOf(new StreamWriter(body), columns, metadata);
  return {
    body,
    write: async (values: readonly ColumnValues[]) => {
      const rows = values[0]?.length ?? 0;
      if (rows) await parquet.write({ columnData: columnData(columns, values), rowGroupSize: rows });
    },
    end: async () => {
      await parquet.finish();
      body.end();
    },
  };
}

/** A whole Parquet file of one row group, for an answer already in memory (an aggregate). */
export function parquetBuffer(columns: readonly ParquetColumn[], values: readonly ColumnValues[], metadata: Record<string, string>): Buffer {
  const writer = new ByteWriter();
  const parquet = writerOf(writer, columns, metadata);
  const rows = values[0]?.length ?? 0;
  // Synchronous: a ByteWriter has no flush to wait for.
  if (rows) void parquet.write({ columnData: columnData(columns, values), rowGroupSize: rows });
  void parquet.finish();
  return Buffer.from(writer.buffer, 0, writer.index);
}
