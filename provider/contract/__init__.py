"""The wire contract: RFC v0 request, result, receipt and the response envelope."""
