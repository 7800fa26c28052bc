"""The wire contract: RFC v0 request, result, receipt and the response envelope (``wire``, ``parse``, ``models``),
the names ``provider_meta`` carries (``meta``), and the documents the commands print (``documents``), with their
JSON Schemas and TypeScript declarations (``models``, ``typescript``; shipped in ``schemas/``)."""
