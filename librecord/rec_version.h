/*
 * rec_version: flightrec's version, one place for the command (`flightrec --version`) and the
 * runtimes (their FLIGHTREC_DEBUG start line). Raised with each release; debian/changelog
 * names the same.
 */
#ifndef REC_VERSION_H
#define REC_VERSION_H

#define FLIGHTREC_VERSION "0.1.0"

#endif
