"""The Plan page's sections: arrive by a deadline, fleet coverage, isochrones, OD matrices."""
