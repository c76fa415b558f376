"""What goes out to people: spreadsheet exports, the HTML report, metadata previews, failure alerts."""
