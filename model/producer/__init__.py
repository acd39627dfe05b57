"""Producer state and transactions: sequences, epochs, markers, the last stable offset."""
