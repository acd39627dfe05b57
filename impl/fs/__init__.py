"""The one file-system seam every other module goes through."""
