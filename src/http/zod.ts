import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Every schema that validates a request also describes it in the OpenAPI document: import z from here.
extendZodWithOpenApi(z);

export { z };
