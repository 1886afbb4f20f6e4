/** The documentation page: Swagger UI from this server's own assets, reading ./../openapi.json. */
export function docsPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>envmon API documentation</title>
<link rel="stylesheet" href="assets/swagger-ui.css">
</head>
<body>
<div id="docs"></div>
<script src="assets/swagger-ui-bundle.js"></script>
<script src="assets/docs.js"></script>
</body>
</html>
`;
}
