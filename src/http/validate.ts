import type { z } from 'zod';
import { invalidParameters, type ParamError } from './problem.js';

/** Turns one zod issue into a sentence fragment that follows the parameter's name. */
function describeIssue(issue: z.ZodIssue, value: unknown): string {
  switch (issue.code) {
    case 'invalid_enum_value':
      return `must be one of ${issue.options.join(', ')}`;
    case 'invalid_type':
      if (value === undefined) return 'is required';
      // A query parameter given twice arrives as an array.
      if (Array.isArray(value) && issue.expected !== 'object') return 'must be given once';
      if (issue.expected === 'number' || issue.expected === 'integer') return 'must be a number';
      return `must be ${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}`;
    case 'too_small':
      if (issue.type === 'string' || issue.type === 'array') {
        if (issue.minimum === 1) return 'must not be empty';
        return `must have at least ${issue.minimum} ${issue.type === 'string' ? 'characters' : 'items'}`;
      }
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.type === 'string' || issue.type === 'array') return `must have at most ${issue.maximum} ${issue.type === 'string' ? 'characters' : 'items'}`;
      return `must be at most ${issue.maximum}`;
    default:
      return issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
  }
}

/**
 * Parses request input with the route's schema. Throws one 400 problem that lists every wrong
 * parameter, not only the first.
 */
export function parseInput<S extends z.ZodTypeAny>(schema: S, input: Record<string, unknown>, whole = 'request'): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors: ParamError[] = result.error.issues.map((issue) => {
    const param = issue.path.length > 0 ? issue.path.join('.') : whole;
    return { param, message: describeIssue(issue, issue.path.length > 0 ? input?.[String(issue.path[0])] : input) };
  });
  throw invalidParameters(errors);
}
