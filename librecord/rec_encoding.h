/*
 * rec_encoding: which records a front end's hooks write into its rings. librecord only carries
 * the tag (rec_session's front end declares it, each ring's sink compares it with its own):
 * the bytes themselves are the formats' business (formats/xcode/fn_decode.h reads them back as
 * function events for a sink of another format).
 */
#ifndef REC_ENCODING_H
#define REC_ENCODING_H

enum rec_encoding {
	REC_ENC_NONE = 0,
	REC_ENC_UFTRACE, /* libmcount: 16-byte uftrace records */
	REC_ENC_FDR,	 /* xray-rt: XRay FDR records */
	REC_ENC_TP,	 /* tracepoint frames (rec_tp.h) */
};

#endif
