"""Developer tools beside the product: driving the app in a browser, taking screenshots."""
