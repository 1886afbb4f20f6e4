import { qualityFlags, readingColumnNames, type QualityFlag } from '../reading.js';

/** The columns of `readings` a batch's COPY rows hold, in their order. */
export const readingColumns = ['station_id', ...readingColumnNames].join(', ');
export const readingFieldCount = 1 + readingColumnNames.length;

/** Where a row's quality flag is among its fields. */
export const flagField = 1 + readingColumnNames.indexOf('quality_flag');

/** Each quality flag's text as bytes, made once: every row writes one. */
export const flagWords: Record<QualityFlag, Buffer> = Object.fromEntries(qualityFlags.map((flag) => [flag, Buffer.from(flag)])) as Record<QualityFlag, Buffer>;
