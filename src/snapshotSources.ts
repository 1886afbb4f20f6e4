import { aggregateSnapshotSource, compareSnapshotSource } from './readings/aggregates/snapshotSources.js';
import type { SnapshotSource } from './readings/core/snapshotSource.js';
import { downloadSnapshotSource, historicalSnapshotSource } from './readings/export/snapshotSources.js';

/**
 * The readings endpoints a snapshot may name, each described by the concern that serves it: the service
 * and `envmon snapshots verify` make a snapshot's files from the same descriptions.
 */
export const snapshotSources = (defaultStation: string | undefined): SnapshotSource[] => [
  downloadSnapshotSource(defaultStation),
  historicalSnapshotSource(defaultStation),
  aggregateSnapshotSource(defaultStation),
  compareSnapshotSource(),
];
